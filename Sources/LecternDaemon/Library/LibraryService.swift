import DBus
import Foundation
import LecternCore
import LecternLibrary
import Logging
import Synchronization

/// Lectern's own D-Bus API on /org/lectern/Lectern1: `org.lectern.Library1` (shelves, books, import,
/// queries, the current book) and `org.lectern.Bookmarks1`. Documented in dbus/org.lectern.Library1.xml.
///
/// Ids are int64; 0 means "none" (the top level for shelves). Every change a client would show is
/// announced: ShelvesChanged, BookChanged(id), BookRemoved(id), BookmarksChanged(book), Import* signals,
/// and CurrentBook through PropertiesChanged.
final class LibraryService: Sendable {
    static let path = ObjectPath("/org/lectern/Lectern1")!
    static let libraryInterface = "org.lectern.Library1"
    static let bookmarksInterface = "org.lectern.Bookmarks1"

    let library: Library
    let session: BookSession
    let importer: Importer
    let logger: Logger
    /// Set once the object is exported.
    let object = Mutex<ExportedObject?>(nil)
    private let nextJob = Atomic<UInt32>(1)
    /// Wakes the retry loop when writes start failing: it sleeps, with no timer, while they work.
    private let writesFailed = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))

    /// Told the number of books after it may have changed (MPRIS PlaylistCount follows it).
    let bookCountChanged: @Sendable (Int) -> Void

    init(library: Library, session: BookSession, importer: Importer, logger: Logger,
         bookCountChanged: @escaping @Sendable (Int) -> Void) {
        self.library = library
        self.session = session
        self.importer = importer
        self.logger = logger
        self.bookCountChanged = bookCountChanged
    }

    // MARK: - Signals

    private func emit(_ interface: String, _ signal: String, _ arguments: [DBusValue] = []) {
        guard let object = object.withLock({ $0 }) else { return }
        try? object.emit(interface, signal, arguments)
    }

    /// Publishes the number of books after an import or a delete: read here, on the caller's task, so that
    /// `Get BookCount` and `PlaylistCount` are answered from the stored value, without SQLite on the I/O thread.
    func refreshBookCount() {
        guard let count = try? library.bookCount() else { return }
        object.withLock { $0 }?.update(Self.libraryInterface, ["BookCount": .uint32(UInt32(clamping: count))])
        bookCountChanged(count)
    }

    /// The daemon changed a book by itself (e.g. marked it finished).
    func bookChanged(_ id: Int64) { emit(Self.libraryInterface, "BookChanged", [.int64(id)]) }

    /// The daemon added a bookmark by itself (the sleep timer, an unplug).
    func bookmarksChanged(_ book: Int64) { emit(Self.bookmarksInterface, "BookmarksChanged", [.int64(book)]) }

    /// Whether changes can be saved changed (CanSave, LastError): told once per change, not per failed write.
    func healthChanged(_ health: LibraryHealth) {
        if !health.canSave { writesFailed.continuation.yield() }
        if health.canSave {
            logger.notice("the library can be written again", metadata: ["unsaved": "\(health.unsaved)"])
        } else {
            logger.error("library changes can't be saved; positions are kept in memory until they can",
                         metadata: ["error": "\(health.lastError)"])
        }
        object.withLock { $0 }?.update(Self.libraryInterface, Self.healthProperties(health))
    }

    static func healthProperties(_ health: LibraryHealth) -> [String: DBusValue] {
        ["CanSave": .boolean(health.canSave), "LastError": .string(health.lastError)]
    }

    /// Writes what was kept in memory while the database couldn't be written, every few seconds, until cancelled:
    /// positions saved while paused reach the disk once it works again without waiting for the next save. While
    /// writes work (or nothing can ever be written, the database being read-only), it waits for a failure, with no
    /// timer. While they fail it looks every 2 s even when nothing is kept yet: a failure is told once, and the
    /// first failed write may be one that isn't kept (a setting), the position kept later failing the same way.
    func retryUnsavedWrites() async {
        var failed = writesFailed.stream.makeAsyncIterator()
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(2))
            let health = library.health
            if library.isReadOnly || (health.canSave && health.unsaved == 0) {
                if await failed.next() == nil { return }  // cancelled
            } else if health.unsaved > 0 {
                library.retryUnsavedWrites()
            }
            // (The failure is told before the write it lost is kept: hence the sleep before looking, not after.)
        }
    }

    /// The current book changed (activation, restore, a client opening other files).
    func currentBookChanged(_ book: Book?) {
        object.withLock { $0 }?.update(Self.libraryInterface, ["CurrentBook": .int64(book?.id ?? 0)])
    }

    // MARK: - Declarations

    var interfaces: [Interface] { [libraryInterfaceDeclaration, bookmarksInterfaceDeclaration] }

    private var libraryInterfaceDeclaration: Interface {
        let dict = DBusType.dictionary(key: .string, value: .variant)
        return Interface(Self.libraryInterface,
            methods: [
                method("ListShelves", in: [("parent", .int64)], out: [("shelves", .array(dict))]) { a in
                    [.array(dict, try self.library.shelves(in: Self.optionalID(a[0])).map(Self.encode))]
                },
                method("ListAllShelves", out: [("shelves", .array(dict))]) { _ in
                    [.array(dict, try self.library.allShelves().map(Self.encode))]
                },
                method("CreateShelf", in: [("name", .string), ("parent", .int64)], out: [("id", .int64)]) { a in
                    let shelf = try self.library.createShelf(named: a[0].string ?? "", in: Self.optionalID(a[1]))
                    self.emit(Self.libraryInterface, "ShelvesChanged")
                    return [.int64(shelf.id ?? 0)]
                },
                method("RenameShelf", in: [("id", .int64), ("name", .string)]) { a in
                    try self.library.renameShelf(a[0].int64 ?? 0, to: a[1].string ?? "")
                    self.emit(Self.libraryInterface, "ShelvesChanged")
                    return []
                },
                method("MoveShelf", in: [("id", .int64), ("parent", .int64)]) { a in
                    try self.library.moveShelf(a[0].int64 ?? 0, to: Self.optionalID(a[1]))
                    self.emit(Self.libraryInterface, "ShelvesChanged")
                    return []
                },
                method("DeleteShelf", in: [("id", .int64), ("recursive", .boolean)]) { a in
                    let id = a[0].int64 ?? 0
                    try self.library.checkWritable()
                    let books = (try? self.library.books(in: id, recursive: true).compactMap(\.id)) ?? []
                    try self.library.deleteShelf(id, recursive: a[1].bool ?? false)
                    if let current = await self.session.book?.id, books.contains(current) { await self.session.detach() }
                    for book in books { self.emit(Self.libraryInterface, "BookRemoved", [.int64(book)]) }
                    if !books.isEmpty { self.refreshBookCount() }
                    self.emit(Self.libraryInterface, "ShelvesChanged")
                    return []
                },
                // Listings scale with the library: read from a snapshot taken in call order, off the call queue.
                deferred("ListBooks", in: [("shelf", .int64), ("recursive", .boolean)], out: [("books", .array(dict))]) { a, snapshot in
                    let books = try snapshot.books(in: Self.optionalID(a[0]), recursive: a[1].bool ?? false)
                    return [.array(dict, try Self.encode(books, snapshot))]
                },
                method("GetBook", in: [("id", .int64)], out: [("book", dict)]) { a in
                    [try self.encodeDetails(a[0].int64 ?? 0)]
                },
                method("RenameBook", in: [("id", .int64), ("title", .string)]) { a in
                    try self.library.renameBook(a[0].int64 ?? 0, to: a[1].string ?? "")
                    self.emit(Self.libraryInterface, "BookChanged", [a[0]])
                    return []
                },
                method("MoveBook", in: [("id", .int64), ("shelf", .int64)]) { a in
                    try self.library.moveBook(a[0].int64 ?? 0, to: Self.optionalID(a[1]))
                    self.emit(Self.libraryInterface, "BookChanged", [a[0]])
                    return []
                },
                method("DeleteBook", in: [("id", .int64)]) { a in
                    let id = a[0].int64 ?? 0
                    try self.library.checkWritable()
                    if await self.session.book?.id == id { await self.session.detach() }
                    try self.library.deleteBook(id)
                    self.emit(Self.libraryInterface, "BookRemoved", [a[0]])
                    self.refreshBookCount()
                    return []
                },
                method("ReorderFiles", in: [("id", .int64), ("files", .array(.int64))]) { a in
                    try self.library.reorderFiles(of: a[0].int64 ?? 0, (a[1].elements ?? []).compactMap(\.int64))
                    self.emit(Self.libraryInterface, "BookChanged", [a[0]])
                    return []
                },
                method("SetBookSettings", in: [("id", .int64), ("settings", dict)]) { a in
                    let id = a[0].int64 ?? 0
                    var settings = try self.library.book(id).settings
                    if case .dictionary(_, _, let entries) = a[1],
                       let nested = entries.first(where: { if case .variant(.variant) = $0.value { true } else { false } }) {
                        throw LibraryError.invalidArgument("setting \(nested.key) is a variant inside a variant")
                    }
                    let changes = a[1].stringKeyedDictionary ?? [:]
                    for key in changes.keys where !["volume", "speed", "shuffle", "loop"].contains(key) {
                        throw LibraryError.invalidArgument("unknown setting '\(key)' (volume, speed, shuffle, loop)")
                    }
                    if let v = changes["volume"] { settings.volume = try Self.double(v, "volume") }
                    if let v = changes["speed"] { settings.speed = try Self.double(v, "speed") }
                    if let v = changes["shuffle"] { guard let b = v.bool else { throw LibraryError.invalidArgument("shuffle is a boolean") }; settings.shuffle = b }
                    if let v = changes["loop"] { guard let s = v.string else { throw LibraryError.invalidArgument("loop is a string") }; settings.loop = s }
                    try self.library.setSettings(of: id, settings)
                    if await self.session.book?.id == id { try await self.session.apply(settings) }
                    self.emit(Self.libraryInterface, "BookChanged", [a[0]])
                    return []
                },
                method("SetBookNote", in: [("id", .int64), ("note", .string)]) { a in
                    try self.library.setNote(of: a[0].int64 ?? 0, a[1].string ?? "")
                    self.emit(Self.libraryInterface, "BookChanged", [a[0]])
                    return []
                },
                method("SetBookFinished", in: [("id", .int64), ("finished", .boolean)]) { a in
                    try self.library.setFinished(a[0].int64 ?? 0, a[1].bool ?? false)
                    self.emit(Self.libraryInterface, "BookChanged", [a[0]])
                    return []
                },
                method("ActivateBook", in: [("id", .int64), ("play", .boolean)]) { a in
                    try await self.session.activate(a[0].int64 ?? 0, play: a[1].bool ?? true)
                    return []
                },
                method("Import", in: [("path", .string), ("shelf_path", .string)], out: [("job", .uint32)]) { a in
                    [.uint32(try self.startImport(path: a[0].string ?? "", shelfPath: a[1].string ?? ""))]
                },
                deferred("Find", in: [("query", dict)], out: [("books", .array(dict))]) { a, snapshot in
                    [.array(dict, try Self.encode(try snapshot.find(try Self.query(a[0])), snapshot))]
                },
                deferred("Group", in: [("query", dict), ("property", .string)], out: [("groups", .array(.structure([.string, .uint32])))]) { a, snapshot in
                    guard let property = LibraryQuery.Property(rawValue: a[1].string ?? "") else {
                        throw LibraryError.invalidArgument("group by one of: title, author, album, composer, genre")
                    }
                    let groups = try snapshot.group(try Self.query(a[0]), by: property)
                    return [.array(.structure([.string, .uint32]), groups.map { .structure([.string($0.value), .uint32(UInt32(clamping: $0.books))]) })]
                },
                deferred("Random", in: [("query", dict), ("what", .string)], out: [("found", dict)]) { a, snapshot in
                    let query = try Self.query(a[0])
                    switch a[1].string {
                    case "book":
                        guard let book = try snapshot.randomBook(query) else { throw LibraryError.notFound("no book matches") }
                        return [try Self.encode([book], snapshot)[0]]
                    case "file":
                        guard let file = try snapshot.randomFile(query) else { throw LibraryError.notFound("no file matches") }
                        return [Self.encode(file)]
                    default:
                        throw LibraryError.invalidArgument("Random picks a 'book' or a 'file'")
                    }
                },
            ],
            properties: [
                Property("CurrentBook", .int64),
                Property("BookCount", .uint32),
                Property("DatabaseStatus", .string, changes: .const),
                Property("CanSave", .boolean),
                Property("LastError", .string),
            ],
            signals: [
                SignalDecl("ShelvesChanged"),
                SignalDecl("BookChanged", [("id", .int64)]),
                SignalDecl("BookRemoved", [("id", .int64)]),
                SignalDecl("ImportProgress", [("job", .uint32), ("done", .uint32), ("total", .uint32), ("path", .string)]),
                SignalDecl("ImportFinished", [("job", .uint32), ("books", .array(.int64)), ("error", .string)]),
            ])
    }

    private var bookmarksInterfaceDeclaration: Interface {
        let dict = DBusType.dictionary(key: .string, value: .variant)
        return Interface(Self.bookmarksInterface,
            methods: [
                method("AddBookmark", in: [("book", .int64), ("title", .string), ("note", .string)], out: [("id", .int64)]) { a in
                    let bookId = a[0].int64 ?? 0
                    await self.session.player.noteActivity()
                    let (file, offset) = try await self.placeInBook(bookId)
                    let title = (a[1].string ?? "").isEmpty ? "Bookmark at " + Self.clock(offset) : a[1].string ?? ""
                    let bookmark = try self.library.addBookmark(to: bookId, file: file, offset: offset, title: title, note: a[2].string ?? "")
                    self.emit(Self.bookmarksInterface, "BookmarksChanged", [.int64(bookId)])
                    return [.int64(bookmark.id ?? 0)]
                },
                method("RenameBookmark", in: [("id", .int64), ("title", .string)]) { a in
                    try self.library.renameBookmark(a[0].int64 ?? 0, to: a[1].string ?? "")
                    self.emit(Self.bookmarksInterface, "BookmarksChanged", [.int64(try self.library.bookmark(a[0].int64 ?? 0).bookId)])
                    return []
                },
                method("SetBookmarkNote", in: [("id", .int64), ("note", .string)]) { a in
                    try self.library.setBookmarkNote(a[0].int64 ?? 0, a[1].string ?? "")
                    self.emit(Self.bookmarksInterface, "BookmarksChanged", [.int64(try self.library.bookmark(a[0].int64 ?? 0).bookId)])
                    return []
                },
                method("DeleteBookmark", in: [("id", .int64)]) { a in
                    let bookmark = try self.library.bookmark(a[0].int64 ?? 0)
                    try self.library.deleteBookmark(a[0].int64 ?? 0)
                    self.emit(Self.bookmarksInterface, "BookmarksChanged", [.int64(bookmark.bookId)])
                    return []
                },
                method("ListBookmarks", in: [("book", .int64)], out: [("bookmarks", .array(dict))]) { a in
                    [.array(dict, try self.library.bookmarks(of: a[0].int64 ?? 0).map(Self.encode))]
                },
                method("JumpToBookmark", in: [("id", .int64)]) { a in
                    let bookmark = try self.library.bookmark(a[0].int64 ?? 0)
                    if await self.session.book?.id != bookmark.bookId {
                        try await self.session.activate(bookmark.bookId, play: true)
                    }
                    try await self.session.jump(toFile: bookmark.fileId, offset: bookmark.offset)
                    return []
                },
            ],
            signals: [SignalDecl("BookmarksChanged", [("book", .int64)])])
    }

    /// A method that reads a snapshot of the library taken in call order (on the call queue) and does the rest,
    /// the query and the encoding, off the queue: other callers aren't kept waiting (Method.deferred).
    private func deferred(_ name: String, in inputs: [(String, DBusType)] = [], out outputs: [(String, DBusType)] = [],
                          _ body: @escaping @Sendable ([DBusValue], Library) throws -> [DBusValue]) -> Method {
        Method.deferred(name, in: inputs, out: outputs) { call in
            // Without a snapshot (its connection can't be opened: the file was deleted), read the library itself.
            let snapshot = (try? self.library.snapshot()) ?? self.library
            return {
                do { return try body(call.arguments, snapshot) } catch let error as LibraryError { throw Self.busError(error) }
            }
        }
    }

    /// A method whose library errors become org.lectern.Error.* replies.
    private func method(_ name: String, in inputs: [(String, DBusType)] = [], out outputs: [(String, DBusType)] = [],
                        _ body: @escaping @Sendable ([DBusValue]) async throws -> [DBusValue]) -> Method {
        Method(name, in: inputs, out: outputs) { call in
            do {
                return try await body(call.arguments)
            } catch let error as LibraryError {
                throw Self.busError(error)
            }
        }
    }

    static func busError(_ error: LibraryError) -> BusError {
        switch error {
        case .notFound(let message): return BusError(name: "org.lectern.Error.NotFound", message: message)
        case .invalidArgument(let message): return BusError(name: "org.lectern.Error.InvalidArgument", message: message)
        case .unavailable(let message): return BusError(name: "org.lectern.Error.Unavailable", message: message)
        }
    }

    // MARK: - Import

    private func startImport(path: String, shelfPath: String) throws -> UInt32 {
        guard path.hasPrefix("/") else { throw LibraryError.invalidArgument("the path to import must be absolute, not '\(path)'") }
        try library.checkWritable()
        let folder = URL(fileURLWithPath: path).standardizedFileURL
        guard FileManager.default.fileExists(atPath: folder.path) else { throw LibraryError.notFound("no such file or folder: \(folder.path)") }
        let job = nextJob.wrappingAdd(1, ordering: .relaxed).oldValue
        let importer = self.importer
        // The import runs on its own, off the call queue: the daemon keeps answering and playing.
        Task.detached(priority: .utility) { [self] in
            var lastReport = ContinuousClock.now - .seconds(1)
            do {
                let books = try await importer.run(folder, shelfPath: shelfPath.isEmpty ? nil : shelfPath) { progress in
                    let now = ContinuousClock.now
                    guard now - lastReport >= .milliseconds(100) || progress.done == progress.total else { return }
                    lastReport = now
                    self.emit(Self.libraryInterface, "ImportProgress", [.uint32(job), .uint32(UInt32(clamping: progress.done)),
                                                                         .uint32(UInt32(clamping: progress.total)), .string(progress.current)])
                }
                for book in books { emit(Self.libraryInterface, "BookChanged", [.int64(book)]) }
                refreshBookCount()
                emit(Self.libraryInterface, "ShelvesChanged")
                emit(Self.libraryInterface, "ImportFinished", [.uint32(job), .array(.int64, books.map(DBusValue.int64)), .string("")])
            } catch {
                logger.warning("import failed", metadata: ["path": "\(folder.path)", "error": "\(error)"])
                emit(Self.libraryInterface, "ImportFinished", [.uint32(job), .array(.int64, []), .string("\(error)")])
            }
        }
        return job
    }

    // MARK: - Places

    /// Where a new bookmark of `bookId` goes: the player's position when it is the current book, else its saved one.
    private func placeInBook(_ bookId: Int64) async throws -> (file: Int64, offset: Int64) {
        if let place = await session.currentPlace(), place.book.id == bookId { return (place.file.id ?? 0, place.offset) }
        let book = try library.book(bookId)
        let files = try library.files(of: bookId)
        guard let file = book.positionFileId ?? files.first?.id else { throw LibraryError.invalidArgument("the book has no files") }
        return (file, book.positionFileId == nil ? 0 : book.positionOffset)
    }

    // MARK: - Encoding

    static func optionalID(_ value: DBusValue) -> Int64? {
        guard let id = value.int64, id != 0 else { return nil }
        return id
    }

    static func double(_ value: DBusValue, _ name: String) throws -> Double {
        guard let number = value.double ?? value.int64.map(Double.init) else { throw LibraryError.invalidArgument("\(name) is a number") }
        return number
    }

    static func query(_ value: DBusValue) throws -> LibraryQuery {
        var query = LibraryQuery()
        for (key, v) in value.stringKeyedDictionary ?? [:] {
            guard let text = v.string else { throw LibraryError.invalidArgument("query values are strings ('\(key)')") }
            switch key {
            case "title": query.title = text
            case "author": query.author = text
            case "album": query.album = text
            case "composer": query.composer = text
            case "genre": query.genre = text
            default: throw LibraryError.invalidArgument("unknown query key '\(key)' (title, author, album, composer, genre)")
            }
        }
        return query
    }

    static func clock(_ microseconds: Int64) -> String {
        let total = microseconds / 1_000_000
        return total >= 3600 ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
            : String(format: "%d:%02d", total / 60, total % 60)
    }

    static func time(_ date: Date?) -> DBusValue { .int64(date.map { Int64($0.timeIntervalSince1970 * 1_000_000) } ?? 0) }

    static func encode(_ shelf: Shelf) -> DBusValue {
        .vardict(["id": .int64(shelf.id ?? 0), "parent": .int64(shelf.parentId ?? 0), "name": .string(shelf.name)])
    }

    /// Books as ListBooks gives them, with their totals read from `library` (the snapshot the books came from).
    static func encode(_ books: [Book], _ library: Library) throws -> [DBusValue] {
        let totals = try library.totals(of: books.compactMap(\.id))
        return books.map { book in
            var map: [String: DBusValue] = [
                "id": .int64(book.id ?? 0), "shelf": .int64(book.shelfId ?? 0), "title": .string(book.title),
                "author": .string(book.author ?? ""), "narrator": .string(book.narrator ?? ""),
                "cover": .string(book.coverPath ?? ""), "source": .string(book.sourcePath ?? ""),
                "added": time(book.addedAt), "modified": time(book.modifiedAt), "last_played": time(book.lastPlayedAt),
                "finished": .boolean(book.finished), "note": .string(book.note),
                "volume": .double(book.volume), "speed": .double(book.speed), "shuffle": .boolean(book.shuffle),
                "loop": .string(book.loop), "position_file": .int64(book.positionFileId ?? 0),
                "position_offset": .int64(book.positionOffset),
            ]
            let total = totals[book.id ?? 0]
            map["files"] = .uint32(UInt32(clamping: total?.files ?? 0))
            map["duration"] = .int64(total?.duration ?? 0)
            return .vardict(map)
        }
    }

    static func encode(_ file: BookFile) -> DBusValue {
        var map: [String: DBusValue] = [
            "id": .int64(file.id ?? 0), "book": .int64(file.bookId), "path": .string(file.path),
            "index": .int64(file.position), "duration": .int64(file.duration ?? 0), "available": .boolean(file.available),
        ]
        for (key, value) in [("title", file.title), ("artist", file.artist), ("album", file.album),
                             ("album_artist", file.albumArtist), ("composer", file.composer), ("genre", file.genre)] {
            if let value { map[key] = .string(value) }
        }
        if let n = file.trackNumber { map["track"] = .int64(n) }
        if let n = file.discNumber { map["disc"] = .int64(n) }
        return .vardict(map)
    }

    static func encode(_ bookmark: Bookmark) -> DBusValue {
        .vardict(["id": .int64(bookmark.id ?? 0), "book": .int64(bookmark.bookId), "file": .int64(bookmark.fileId),
                  "offset": .int64(bookmark.offset), "title": .string(bookmark.title), "note": .string(bookmark.note),
                  "created": time(bookmark.createdAt), "kind": .string(bookmark.kind.rawValue)])
    }

    func encodeDetails(_ id: Int64) throws -> DBusValue {
        let book = try library.book(id)
        guard case .dictionary(_, _, var entries) = try Self.encode([book], library)[0] else { return .emptyVardict }
        let chapters = try library.chapters(of: id)
        let files = try library.files(of: id).map { file -> DBusValue in
            guard case .dictionary(let k, let v, var fileEntries) = Self.encode(file) else { return .emptyVardict }
            let list = (chapters[file.id ?? 0] ?? []).map { chapter in
                DBusValue.vardict(["title": .string(chapter.title), "start": .int64(chapter.start), "end": .int64(chapter.end ?? -1)])
            }
            fileEntries.append(.init(.string("chapters"), .variant(.array(.dictionary(key: .string, value: .variant), list))))
            return .dictionary(key: k, value: v, fileEntries)
        }
        entries.append(.init(.string("file_list"), .variant(.array(.dictionary(key: .string, value: .variant), files))))
        return .dictionary(key: .string, value: .variant, entries)
    }
}
