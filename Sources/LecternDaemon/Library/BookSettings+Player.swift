import LecternCore
import LecternLibrary

// A book's loop setting in the player's words and back: while a book plays, the book is the player's queue.

extension LoopMode {
    init(_ loop: BookSettings.Loop) {
        switch loop {
        case .none: self = .none
        case .chapter: self = .chapter
        case .book: self = .queue
        }
    }
}

extension BookSettings.Loop {
    init(_ mode: LoopMode) {
        switch mode {
        case .none: self = .none
        case .chapter: self = .chapter
        case .queue: self = .book
        }
    }
}
