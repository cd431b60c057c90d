import Foundation
import LecternCore
import LecternLibrary
import LecternMedia
import Logging
import Threads

/// What a client opens (MPRIS OpenUri, the desktop's Open, `lectern open`) plays as a book of the library, so that
/// everything a book has (its place, bookmarks, settings, history, undo) works on it. An http or https stream is not a
/// book: it plays as a transient item, the current book paused at its place (``BookSession/playStreams(_:)``).
///
/// - A folder is imported as `lectern book import` imports it: a book it holds already is found again (moved or
///   renamed too, by its files' fingerprints), a new one is added. The book of its first files plays (the books'
///   folders in natural order, then their titles), at its place.
/// - A file alone joins the book that has it, else the book of its folder and album tag, else becomes a book of its
///   own (titled by its album tag, or its folder's name when it has none, as an import of its folder would make it);
///   the book's other files are left as they are. A copy of a file the library has is that file's book. It plays from
///   the start of that file, unless the book's place is in it; the place it leaves is an undo step.
///
/// Books stay where their files are: one opened from outside the library folders is remembered there, and nothing
/// watches its folder. With a library that cannot be written, what was opened plays as it is, as no book.
///
/// ```swift
/// let book = try await opener.open(["file:///home/me/Audiobooks/Dune"])
/// ```
public struct BookOpener: Sendable {
    let imports: ImportJobs
    let session: BookSession
    let media: MediaOpener
    let logger: Logger
    /// Told of each import, as a client's import is (its progress and end, the books it made).
    let events: @Sendable (ImportJobs.Event) async -> Void

    public init(imports: ImportJobs, session: BookSession, media: MediaOpener, logger: Logger,
                events: @escaping @Sendable (ImportJobs.Event) async -> Void) {
        self.imports = imports
        self.session = session
        self.media = media
        self.logger = logger
        self.events = events
    }

    /// Makes each of `uris` (file:// URIs or absolute paths) a book, or finds the book it is, and plays the first one's
    /// (nil when the library could not be written: the files play as they are). Throws an ``OpenError`` a client can
    /// read when one of them cannot be opened: nothing plays then (the books of those before it are in the library).
    /// http and https URIs are streams: they play as a transient queue, never a book (``BookSession/playStreams(_:)``).
    @discardableResult
    public func open(_ uris: [String]) async throws -> Int64? {
        let streams = try uris.compactMap(MediaOpener.streamURL(from:))
        if !streams.isEmpty {
            guard streams.count == uris.count else {
                throw OpenError(.invalid, "Open streams or files, not both at once")
            }
            await session.playStreams(streams.map(MediaOpener.streamItem))
            return nil
        }
        var targets: [(url: URL, isDirectory: Bool)] = []
        for uri in uris { targets.append(try await MediaOpener.check(uri)) }
        guard !targets.isEmpty else { throw OpenError(.invalid, "Nothing to open: give a file or a folder") }
        do {
            var first: (book: Int64, file: Int64?)?
            for target in targets {
                let found = try await book(of: target.url, isDirectory: target.isDirectory)
                first = first ?? found
            }
            guard let first else { return nil }
            try await session.activate(first.book, play: true, opened: first.file)
            return first.book
        } catch let error as LibraryError where error.isUnavailable {
            logger.warning("the library cannot be written: playing what was opened as it is, not as a book",
                           metadata: ["error": "\(error)"])
            var items: [MediaItem] = []
            for uri in uris { items += try await media.open(uri) }
            await session.detach()
            await media.play(items, on: session.player)
            return nil
        } catch let error as OpenError {
            throw error
        } catch let error as LibraryError {
            switch error {
            case .notFound(let message): throw OpenError(.notFound, Self.sentence(message))
            default: throw OpenError(.invalid, Self.sentence(error.description))
            }
        } catch let error as Importer.NoAudioFiles {
            throw OpenError(.invalid, "No audio files in \(error.folder)")
        } catch {
            throw OpenError(.failed, Self.sentence("\(error)"))
        }
    }

    /// The book `url` is, imported (or found again) now, with the file of it that `url` is (nil for a folder).
    private func book(of url: URL, isDirectory: Bool) async throws -> (book: Int64, file: Int64?) {
        let books = try await imports.importNow(path: url.path, shelfPath: "", events: events).get()
        let library = session.library
        if isDirectory {
            let found = try await library.reading { library in try books.map { try library.book($0) } }
            guard let first = found.min(by: Self.comesFirst), let id = first.id else {
                throw OpenError(.invalid, "No audio files in \(url.path) can be played")
            }
            return (id, nil)
        }
        let path = url.path
        var file = try await library.reading { try $0.file(at: path, fingerprint: nil, in: books) }
        if file == nil {
            // A copy of a file the library has, left out by the import: that file is the one opened.
            let fingerprint = await ThreadPool.fileSystem.run { FileFingerprint.of(path)?.value }
            file = try await library.reading { try $0.file(at: path, fingerprint: fingerprint, in: books) }
        }
        guard let file, let id = file.id else { throw OpenError(.invalid, "Cannot play \(path)") }
        return (file.bookId, id)
    }

    /// The order in which a folder's books come: their folders in natural order, then their titles.
    private static func comesFirst(_ a: Book, _ b: Book) -> Bool {
        let (folderA, folderB) = (a.sourcePath ?? "", b.sourcePath ?? "")
        if folderA != folderB { return NaturalOrder.areInIncreasingOrder(folderA, folderB) }
        return NaturalOrder.areInIncreasingOrder(a.title, b.title)
    }

    /// `message` as the start of a sentence, as OpenError's messages are.
    private static func sentence(_ message: String) -> String { message.prefix(1).uppercased() + message.dropFirst() }
}
