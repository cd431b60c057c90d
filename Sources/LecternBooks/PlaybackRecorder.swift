import Foundation
import LecternCore
import LecternLibrary
import Logging

/// What the player does with the current book, kept in the library: the position (at each tick while playing, at
/// every pause, seek, stop and change of file or chapter, only when it changed), the settings clients change through
/// the player, the shuffled order, the listening sessions (``SessionTracker``: a row updated with the position), the
/// places clients' moves left (``UndoStack``), the automatic bookmarks (the sleep timer, an unplugged output) and the
/// book finished. Owned by the ``BookSession`` actor, which hands it each of the player's events with the current
/// book and its files.
struct PlaybackRecorder {
    let library: Library
    let view: PlayerView
    let logger: Logger
    let undo: UndoStack
    let announce: @Sendable (BookSession.News) -> Void

    /// The settings in the last state of this book's queue the player published.
    var lastSettings: BookSettings?
    /// The current book's shuffled order as saved (file ids).
    var savedShuffleOrder: [Int64] = []
    /// The daemon is stopping and the position was saved for the last time: nothing moves it after that, neither a
    /// tick still queued (older) nor a command a client sent during the shutdown (a PlayPause after the player
    /// stopped would start the file again from 0).
    var closed = false
    /// The listening sessions, from the player's events.
    private var sessions = SessionTracker()

    init(library: Library, view: PlayerView, logger: Logger, announce: @escaping @Sendable (BookSession.News) -> Void) {
        self.library = library
        self.view = view
        self.logger = logger
        self.announce = announce
        undo = UndoStack(library: library, logger: logger)
    }

    /// Keeps what `event` changed of `book` (whose files in the queue are `files`); `book` learns it is finished.
    mutating func record(_ event: PlayerEvent, book: inout Book?, files: [Int64: BookFile]) {
        recordHistory(event, book: book)
        guard !closed else { return }  // the player stopped by the shutdown leaves no undo step nor bookmark
        switch event {
        case .stateChanged(let state, let previous):
            guard let id = book?.id, state.queueID == .book(id) else { return }  // not (yet) this book's queue
            saveSettings(state, book: book)
            saveShuffleOrder(state, book: book)
            if previous.status != state.status && state.status != .stopped || previous.current?.id != state.current?.id
                || previous.currentChapter != state.currentChapter {
                savePosition(book: book, files: files)
            }
            // "Last played" is when it last stopped playing: what the smart rewind measures a pause from.
            if previous.status == .playing && state.status != .playing { try? library.markPlayed(id) }
        case .seeked:
            savePosition(book: book, files: files)
        case .silenceSkipped:
            break  // playing on, faster: the next tick saves the position and grows the session
        case .itemFailed:
            break  // the player logged it and went on; the position is saved with the next file's state
        case .interruption:
            break  // a pause or resume it made is a state change, saved as such
        case .moving(let point):
            guard let id = book?.id, point.queueID == .book(id), let file = Self.fileID(point.item, in: files) else { return }
            undo.push(on: id, placeBook: id, file: file, offset: point.position.microseconds, kind: point.kind)
        case .playing(let item, let position):
            // Each save while playing also notes the moment as the book's last played (see Library.savePosition).
            savePosition(item, offset: position.microseconds, playedAt: Date(), book: book, files: files)
        case .stopped(let item, let position):
            savePosition(item, offset: position.microseconds, book: book, files: files)
            // Stop returns to the start of the chapter: a place a second or more into it is kept (an undo step too).
            let chapterStart = item.chapters.last { $0.start <= position }?.start ?? .zero
            if position - chapterStart >= .seconds(1) {
                addAutomaticBookmark(.stop, title: "Stopped", item: item, offset: position.microseconds, book: book, files: files)
            }
        case .finished:
            guard let id = book?.id else { return }
            do {
                try library.setFinished(id, true)
                book?.finished = true
                announce(.bookChanged(id))
            } catch {
                logger.error("cannot mark the book finished", metadata: ["book": "\(id)", "error": "\(error)"])
            }
        case .sleepTimerFired(let item, let position):
            savePosition(item, offset: position.microseconds, book: book, files: files)
            addAutomaticBookmark(.sleepTimer, title: "Sleep timer", item: item, offset: position.microseconds, book: book, files: files)
        }
    }

    /// Hands the event to the session tracker and stores the sessions it started, grew or ended: while playing, one
    /// UPDATE of the open session's row at each tick, beside the position's.
    private mutating func recordHistory(_ event: PlayerEvent, book: Book?) {
        guard !closed else { return }
        for session in sessions.handle(event, filePosition: view.position(), silence: view.silenceSkipped, now: Date()) {
            // A book deleted while it played (the session let go of it) gets no new session.
            guard session.id != nil || session.bookID == book?.id else { continue }
            let stored = ListenedSession(id: session.id, bookId: session.bookID, startedAt: session.started, endedAt: session.ended,
                                         fromPosition: session.from.microseconds, toPosition: session.to.microseconds,
                                         listened: session.listened.microseconds, content: session.content.microseconds,
                                         speed: session.rate, silence: session.silence.microseconds)
            do {
                if session.id != nil {
                    try library.updateSession(stored)
                } else {
                    sessions.assign(id: try library.insertSession(stored), to: session)
                }
            } catch let error as LibraryError where error.isUnavailable {
                // Written whole by the next write that works (a new session is inserted then).
            } catch {
                logger.error("cannot record the listening session", metadata: ["book": "\(session.bookID)", "error": "\(error)"])
            }
        }
    }

    /// Grows the open session to the position now, as a tick would: before the book changes or the daemon stops, so
    /// that the session ends where the listener was, not at the last tick.
    mutating func recordHeardSoFar(book: Book?) {
        let state = view.state
        guard state.status == .playing, let item = state.current else { return }
        recordHistory(.playing(item, at: view.position()), book: book)
    }

    /// A bookmark the daemon makes by itself (the sleep timer stopped, the output went away), where `item` (else the
    /// current file) is at `offset` (else the position now).
    func addAutomaticBookmark(_ kind: Bookmark.Kind, title: String, item: MediaItem? = nil, offset: Int64? = nil,
                              book: Book?, files: [Int64: BookFile]) {
        guard let bookId = book?.id, let fileId = Self.fileID(item ?? view.state.current, in: files) else { return }
        let offset = offset ?? view.position().microseconds
        do {
            _ = try library.addBookmark(to: bookId, file: fileId, offset: max(0, offset), title: title, kind: kind)
            announce(.bookmarksChanged(bookId))
        } catch {
            logger.error("cannot add an automatic bookmark", metadata: ["book": "\(bookId)", "error": "\(error)"])
        }
    }

    /// Keeps the shuffled order with the book, so that it plays in the same order until reshuffled.
    private mutating func saveShuffleOrder(_ state: PlayerState, book: Book?) {
        guard let bookId = book?.id, let order = state.shuffleOrder else { return }
        let fileIds = order.compactMap { state.queue[$0].libraryFileID }
        guard fileIds != savedShuffleOrder else { return }
        do {
            try library.setShuffleOrder(of: bookId, fileIds)
            savedShuffleOrder = fileIds
        } catch {
            logger.error("cannot save the shuffled order", metadata: ["book": "\(bookId)", "error": "\(error)"])
        }
    }

    /// Saves the player's position in the current book (a no-op when nothing changed).
    func savePosition(playedAt: Date? = nil, book: Book?, files: [Int64: BookFile]) {
        let state = view.state
        guard state.status != .stopped, let item = state.current else { return }
        savePosition(item, offset: view.position().microseconds, playedAt: playedAt, book: book, files: files)
    }

    private func savePosition(_ item: MediaItem, offset: Int64, playedAt: Date? = nil, book: Book?, files: [Int64: BookFile]) {
        guard !closed, let bookId = book?.id, let fileId = Self.fileID(item, in: files) else { return }
        do {
            try library.savePosition(of: bookId, file: fileId, offset: offset, playedAt: playedAt)
        } catch let error as LibraryError where error.isUnavailable {
            // Kept in memory by the library; the daemon logs once that writes fail (LibraryService.healthChanged).
        } catch {
            logger.error("cannot save the position", metadata: ["book": "\(bookId)", "error": "\(error)"])
        }
    }

    /// The library id of the file of `files` that `item` plays; nil when it is not one (another queue, a file left out).
    static func fileID(_ item: MediaItem?, in files: [Int64: BookFile]) -> Int64? {
        item?.libraryFileID.flatMap { files[$0] }?.id
    }

    /// Saves the settings when the player's changed between two of this book's states (a client set them
    /// through MPRIS, or SetBookSettings applied them). Comparing with the previous state, not with the
    /// database, keeps a late event from before a change from writing old values over new ones.
    private mutating func saveSettings(_ state: PlayerState, book: Book?) {
        guard let bookId = book?.id else { return }
        let settings = BookPlayback.settings(of: book, in: state)
        defer { lastSettings = settings }
        guard let lastSettings, settings != lastSettings else { return }
        do { try library.setSettings(of: bookId, settings) } catch {
            logger.error("cannot save the book's settings", metadata: ["book": "\(bookId)", "error": "\(error)"])
        }
    }
}
