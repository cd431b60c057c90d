import LecternCore
import LecternLibrary
import Logging

/// Each book's undo stack in the library: the places clients' moves left (a skip, a chapter, a jump), and the book left
/// for another. Pushed by the ``BookSession`` when the player tells of a move or a book is activated; popped by an undo.
struct UndoStack: Sendable {
    let library: Library
    let logger: Logger

    /// Keeps `offset` in `file` of `placeBook` on `bookId`'s stack (`kind`: what the move was). A library that cannot be
    /// written keeps nothing; the daemon has said so once already.
    func push(on bookId: Int64, placeBook: Int64, file: Int64, offset: Int64, kind: MoveKind) {
        do {
            try library.pushUndo(on: bookId, placeBook: placeBook, file: file, offset: offset, kind: kind.rawValue)
        } catch let error as LibraryError where error.isUnavailable {
            // The daemon logs once that writes fail (LibraryService.healthChanged); the place is not kept.
        } catch {
            logger.error("cannot keep the place to undo", metadata: ["book": "\(bookId)", "error": "\(error)"])
        }
    }

    /// Takes the newest place off `book`'s stack; throws when there is none.
    func pop(_ book: Book) throws -> UndoEntry {
        guard let entry = try library.popUndo(of: book.id ?? 0) else {
            throw LibraryError.notFound("nothing to undo in “\(book.title)”")
        }
        return entry
    }
}
