import Foundation
import LecternCore
import LecternLibrary

/// What a library call does beyond the library's own rules: the current book's session follows a deletion or a
/// change of settings, a new bookmark goes where the listener is, a jump to a bookmark activates its book first.
/// Typed arguments, no D-Bus: the interfaces (LibraryService+Library1, +Bookmarks1) decode and announce.
///
/// ```swift
/// let removed = try await rules.deleteShelf(shelf, recursive: true)  // the books that went with it
/// ```
public struct LibraryRules: Sendable {
    let library: Library
    let writer: LibraryWriter
    public let session: BookSession
    public let meter: LoudnessMeter

    public init(library: Library, writer: LibraryWriter, session: BookSession, meter: LoudnessMeter) {
        self.library = library
        self.writer = writer
        self.session = session
        self.meter = meter
    }

    /// Deletes a shelf (see ``Library/deleteShelf(_:recursive:)``); the session lets go of a book deleted with it.
    /// Returns the books on the shelf and below it, which the deletion removed.
    public func deleteShelf(_ id: Int64, recursive: Bool) async throws -> [Int64] {
        let books = try await writer.write { try $0.deleteShelf(id, recursive: recursive) }
        if let current = await session.book?.id, books.contains(current) { await session.detach() }
        return books
    }

    /// Deletes a book; the session lets go of it first when it is the current book.
    public func deleteBook(_ id: Int64) async throws {
        try await writer.write { try $0.checkWritable() }
        if await session.book?.id == id { await session.detach() }
        try await writer.write { try $0.deleteBook(id) }
    }

    /// Changes a book's settings with `change` (which may refuse them by throwing), saves them, and applies them
    /// to the player when it is the current book.
    public func changeSettings(of id: Int64, _ change: (inout BookSettings) throws -> Void) async throws {
        var settings = try await library.reading { try $0.book(id) }.settings
        try change(&settings)
        try await writer.write { [settings] in try $0.setSettings(of: id, settings) }
        if await session.book?.id == id { try await session.apply(settings) }
        // Normalisation turned on for a book never measured: measured now, in the background.
        if settings.normalise, let book = try? await library.reading({ try $0.book(id) }), book.loudness == nil, book.loudnessProblem == nil {
            meter.measure(id)
        }
    }

    /// Adds a bookmark where the book is: the player's position when it is the current book, else its saved one.
    /// An empty `title` becomes "Bookmark at 1:02:03". Counts as activity (the sleep timer's shake).
    public func addBookmark(to bookId: Int64, title: String, note: String) async throws -> Bookmark {
        await session.player.noteActivity()
        let (file, offset) = try await placeInBook(bookId)
        let title = title.isEmpty ? "Bookmark at " + Duration.microseconds(offset).clock : title
        return try await writer.write { try $0.addBookmark(to: bookId, file: file, offset: offset, title: title, note: note) }
    }

    /// Plays from a bookmark, activating its book first when it isn't the current one; what is left when that
    /// activation waits for an import to find the book's files (``BookSession/activation(of:play:)``). One undo
    /// returns to where the listener was: in this book, or in the book left for it.
    public func jump(toBookmark id: Int64) async throws -> BookSession.PendingActivation? {
        let bookmark = try await library.reading { try $0.bookmark(id) }
        let session = session
        let jump = { @Sendable (kind: MoveKind?) in try await session.jump(toFile: bookmark.fileId, offset: bookmark.offset, as: kind) }
        if await session.book?.id == bookmark.bookId {
            try await jump(.bookmark)
            return nil
        }
        guard let activation = try await session.activation(of: bookmark.bookId, play: true) else {
            try await jump(nil)
            return nil
        }
        return {
            try await activation()
            try await jump(nil)
        }
    }

    /// `id`, or the current book for 0.
    public func bookOrCurrent(_ id: Int64) async throws -> Int64 {
        if id != 0 { return id }
        guard let current = await session.book?.id else { throw LibraryError.notFound("no book is current") }
        return current
    }

    /// Where a new bookmark of `bookId` goes: the player's position when it is the current book, else its saved one.
    private func placeInBook(_ bookId: Int64) async throws -> (file: Int64, offset: Int64) {
        if let place = await session.currentPlace(), place.book.id == bookId { return (place.file.id ?? 0, place.offset) }
        let (book, files) = try await library.reading { library in (try library.book(bookId), try library.files(of: bookId)) }
        guard let file = book.positionFileId ?? files.first?.id else { throw LibraryError.invalidArgument("the book has no files") }
        return (file, book.positionFileId == nil ? 0 : book.positionOffset)
    }
}
