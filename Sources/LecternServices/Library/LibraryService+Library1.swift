import DBus
import Foundation
import LecternBooks
import LecternLibrary
import LecternMedia

// org.lectern.Library1, the face: each method decodes its arguments, calls the library (or LibraryRules, ImportJobs)
// and announces what changed. Listings are deferred: read and encoded off the call queue, after the calls before them.
extension LibraryService {
    func libraryInterfaceDeclaration(_ rules: LibraryRules) -> Interface {
        let dict = DBusType.dictionary(key: .string, value: .variant)
        return Interface(Self.libraryInterface,
            methods: [
                method("ListShelves", in: [("parent", .int64)], out: [("shelves", .array(dict))]) { call in
                    let parent = Self.optionalID(try call.argument(0))
                    return [.array(dict, try await self.library.reading { try $0.shelves(in: parent) }.map(Self.encode))]
                },
                method("ListAllShelves", out: [("shelves", .array(dict))]) { _ in
                    [.array(dict, try await self.library.reading { try $0.allShelves() }.map(Self.encode))]
                },
                method("CreateShelf", in: [("name", .string), ("parent", .int64)], out: [("id", .int64)]) { call in
                    let (name, parent) = try call.arguments(String.self, Int64.self)
                    let shelf = try await self.writer.write { try $0.createShelf(named: name, in: Self.optionalID(parent)) }
                    self.emit(Self.libraryInterface, "ShelvesChanged")
                    return [.int64(shelf.id ?? 0)]
                },
                method("RenameShelf", in: [("id", .int64), ("name", .string)]) { call in
                    let (id, name) = try call.arguments(Int64.self, String.self)
                    try await self.writer.write { try $0.renameShelf(id, to: name) }
                    self.emit(Self.libraryInterface, "ShelvesChanged")
                    return []
                },
                method("MoveShelf", in: [("id", .int64), ("parent", .int64)]) { call in
                    let (id, parent) = try call.arguments(Int64.self, Int64.self)
                    try await self.writer.write { try $0.moveShelf(id, to: Self.optionalID(parent)) }
                    self.emit(Self.libraryInterface, "ShelvesChanged")
                    return []
                },
                method("DeleteShelf", in: [("id", .int64), ("recursive", .boolean)]) { call in
                    let (id, recursive) = try call.arguments(Int64.self, Bool.self)
                    let books = try await rules.deleteShelf(id, recursive: recursive)
                    for book in books { self.emit(Self.libraryInterface, "BookRemoved", [.int64(book)]) }
                    if !books.isEmpty { await self.refreshBookCount() }
                    self.emit(Self.libraryInterface, "ShelvesChanged")
                    return []
                },
                // Listings scale with the library: read and encoded off the call queue, after the calls before them.
                // Each reply is one page, sorted and cut by the database: ListBooks and Find, which take no size, the first.
                deferred("ListBooks", in: [("shelf", .int64), ("recursive", .boolean)], out: [("books", .array(Self.listedBook))]) { call, library in
                    let (shelf, recursive) = try call.arguments(Int64.self, Bool.self)
                    let page = try library.books(in: Self.optionalID(shelf), recursive: recursive, sortedBy: .title,
                                                 offset: 0, limit: Library.defaultPageSize)
                    return [Self.encode(page.books, page.totals)]
                },
                deferred("ListBooksPage", in: [("shelf", .int64), ("recursive", .boolean), ("order", .string), ("offset", .uint32), ("limit", .uint32)],
                         out: [("books", .array(Self.listedBook)), ("total", .uint32)]) { call, library in
                    let (shelf, recursive, order, offset, limit) = try call.arguments(Int64.self, Bool.self, String.self, UInt32.self, UInt32.self)
                    return Self.encode(try library.books(in: Self.optionalID(shelf), recursive: recursive, sortedBy: try Self.sort(order),
                                                         offset: Int(offset), limit: Int(limit)))
                },
                deferred("ListBooksMatching", in: [("shelf", .int64), ("recursive", .boolean), ("query", dict), ("order", .string),
                                                   ("offset", .uint32), ("limit", .uint32)],
                         out: [("books", .array(Self.listedBook)), ("total", .uint32)]) { call, library in
                    let (shelf, recursive, conditions, order, offset, limit) = try call.arguments(
                        Int64.self, Bool.self, [String: DBusValue].self, String.self, UInt32.self, UInt32.self)
                    return Self.encode(try library.books(in: Self.optionalID(shelf), recursive: recursive, matching: try Self.query(conditions),
                                                         sortedBy: try Self.sort(order), offset: Int(offset), limit: Int(limit)))
                },
                method("GetBook", in: [("id", .int64)], out: [("book", dict)]) { call in
                    let id: Int64 = try call.argument(0)
                    return [try await self.library.reading { try Self.encodeDetails(id, in: $0) }]
                },
                method("RenameBook", in: [("id", .int64), ("title", .string)]) { call in
                    let (id, title) = try call.arguments(Int64.self, String.self)
                    try await self.writer.write { try $0.renameBook(id, to: title) }
                    self.bookChanged(id)
                    return []
                },
                method("MoveBook", in: [("id", .int64), ("shelf", .int64)]) { call in
                    let (id, shelf) = try call.arguments(Int64.self, Int64.self)
                    try await self.writer.write { try $0.moveBook(id, to: Self.optionalID(shelf)) }
                    self.bookChanged(id)
                    return []
                },
                method("MoveBooks", in: [("shelf", .int64), ("recursive", .boolean), ("query", dict), ("to", .int64)],
                       out: [("moved", .array(.int64))]) { call in
                    let (shelf, recursive, conditions, target) = try call.arguments(Int64.self, Bool.self, [String: DBusValue].self, Int64.self)
                    let query = try Self.query(conditions)
                    let moved = try await self.writer.write {
                        try $0.moveBooks(in: Self.optionalID(shelf), recursive: recursive, matching: query, to: Self.optionalID(target))
                    }
                    for id in moved { self.bookChanged(id) }
                    return [.array(.int64, moved.map(DBusValue.int64))]
                },
                method("DeleteBook", in: [("id", .int64)]) { call in
                    let id: Int64 = try call.argument(0)
                    try await rules.deleteBook(id)
                    self.emit(Self.libraryInterface, "BookRemoved", [.int64(id)])
                    await self.refreshBookCount()
                    return []
                },
                method("ReorderFiles", in: [("id", .int64), ("files", .array(.int64))]) { call in
                    let (id, files) = try call.arguments(Int64.self, [Int64].self)
                    try await self.writer.write { try $0.reorderFiles(of: id, files) }
                    self.bookChanged(id)
                    return []
                },
                method("SetBookSettings", in: [("id", .int64), ("settings", dict)]) { call in
                    let (id, changes) = try call.arguments(Int64.self, [String: DBusValue].self)
                    try await rules.changeSettings(of: id) { settings in
                        if let nested = changes.first(where: { if case .variant = $0.value { true } else { false } }) {
                            throw LibraryError.invalidArgument("setting '\(nested.key)' is a variant inside a variant")
                        }
                        let known = ["volume", "speed", "shuffle", "loop", "normalise", "skip_intro", "skip_outro", "compress",
                                     "skip_silence", "silence_threshold", "silence_amount"]
                        for key in changes.keys where !known.contains(key) {
                            throw LibraryError.invalidArgument("unknown setting '\(key)' (\(known.joined(separator: ", ")))")
                        }
                        if let v = changes["volume"] { settings.volume = try Self.double(v, "volume") }
                        if let v = changes["speed"] { settings.speed = try Self.double(v, "speed") }
                        if let v = changes["shuffle"] { guard let b = v.bool else { throw LibraryError.invalidArgument("shuffle is a boolean") }; settings.shuffle = b }
                        if let v = changes["loop"] { settings.loop = try Self.loop(v) }
                        if let v = changes["normalise"] {
                            guard let b = v.bool else { throw LibraryError.invalidArgument("normalise is a boolean") }
                            settings.normalise = b
                        }
                        if let v = changes["skip_intro"] { settings.skipIntro = try Self.double(v, "skip_intro") }
                        if let v = changes["skip_outro"] { settings.skipOutro = try Self.double(v, "skip_outro") }
                        if let v = changes["compress"] {
                            guard let b = v.bool else { throw LibraryError.invalidArgument("compress is a boolean") }
                            settings.compress = b
                        }
                        if let v = changes["skip_silence"] {
                            guard let b = v.bool else { throw LibraryError.invalidArgument("skip_silence is a boolean") }
                            settings.skipSilence = b
                        }
                        if let v = changes["silence_threshold"] { settings.silenceThreshold = try Self.double(v, "silence_threshold") }
                        if let v = changes["silence_amount"] { settings.silenceAmount = try Self.double(v, "silence_amount") }
                    }
                    self.bookChanged(id)
                    return []
                },
                method("MeasureLoudness", in: [("id", .int64)]) { call in
                    let id: Int64 = try call.argument(0)
                    _ = try await self.library.reading { try $0.book(id) }
                    rules.meter.measure(id)
                    return []
                },
                method("SetBookNote", in: [("id", .int64), ("note", .string)]) { call in
                    let (id, note) = try call.arguments(Int64.self, String.self)
                    try await self.writer.write { try $0.setNote(of: id, note) }
                    self.bookChanged(id)
                    return []
                },
                method("SetBookSeries", in: [("id", .int64), ("series", .string), ("part", .string)]) { call in
                    let (id, series, part) = try call.arguments(Int64.self, String.self, String.self)
                    try await self.writer.write { try $0.setSeries(of: id, series, part: part) }
                    await rules.session.seriesChanged(of: id)
                    self.bookChanged(id)
                    return []
                },
                deferred("ListSeries", out: [("series", .array(.structure([.string, .uint32])))]) { _, library in
                    [.array(.structure([.string, .uint32]), try library.allSeries().map {
                        .structure([.string($0.name), .uint32(UInt32(clamping: $0.books))])
                    })]
                },
                method("SetBookFinished", in: [("id", .int64), ("finished", .boolean)]) { call in
                    let (id, finished) = try call.arguments(Int64.self, Bool.self)
                    try await self.writer.write { try $0.setFinished(id, finished) }
                    self.bookChanged(id)
                    return []
                },
                Self.activating("ActivateBook", in: [("id", .int64), ("play", .boolean)]) { call in
                    let (id, play) = try call.arguments(Int64.self, Bool.self)
                    return try await rules.session.activation(of: id, play: play)
                },
                method("Import", in: [("path", .string), ("shelf_path", .string)], out: [("job", .uint32)]) { call in
                    let (path, shelfPath) = try call.arguments(String.self, String.self)
                    return [.uint32(try await self.startImport(path: path, shelfPath: shelfPath))]
                },
                deferred("Find", in: [("query", dict)], out: [("books", .array(Self.listedBook))]) { call, library in
                    let page = try library.search("", try Self.query(call.argument(0)), offset: 0, limit: Library.defaultPageSize)
                    return [Self.encode(page.books, page.totals)]
                },
                deferred("Search", in: [("text", .string), ("query", dict), ("offset", .uint32), ("limit", .uint32)],
                         out: [("books", .array(Self.listedBook)), ("total", .uint32)]) { call, library in
                    let (text, query, offset, limit) = try call.arguments(String.self, [String: DBusValue].self, UInt32.self, UInt32.self)
                    return Self.encode(try library.search(text, try Self.query(query), offset: Int(offset), limit: Int(limit)))
                },
                deferred("Group", in: [("query", dict), ("property", .string)], out: [("groups", .array(.structure([.string, .uint32])))]) { call, library in
                    let (query, groupBy) = try call.arguments([String: DBusValue].self, String.self)
                    guard let property = LibraryQuery.Property(rawValue: groupBy) else {
                        throw LibraryError.invalidArgument("group by one of: title, author, album, composer, genre")
                    }
                    let groups = try library.group(try Self.query(query), by: property)
                    return [.array(.structure([.string, .uint32]), groups.map { .structure([.string($0.value), .uint32(UInt32(clamping: $0.books))]) })]
                },
                deferred("Random", in: [("query", dict), ("what", .string)], out: [("found", dict)]) { call, library in
                    let (conditions, what) = try call.arguments([String: DBusValue].self, String.self)
                    let query = try Self.query(conditions)
                    switch what {
                    case "book":
                        guard let (book, totals) = try library.randomBook(query) else { throw LibraryError.notFound("no book matches") }
                        return [Self.encode(book, totals)]
                    case "file":
                        guard let file = try library.randomFile(query) else { throw LibraryError.notFound("no file matches") }
                        return [Self.encode(file)]
                    default:
                        throw LibraryError.invalidArgument("Random picks a 'book' or a 'file'")
                    }
                },
            ],
            properties: [
                Property("CurrentBook", .int64),
                Property("BookCount", .uint32),
                Property("OfflineBooks", .uint32),
                Property("MissingFiles", .uint32),
                Property("DatabaseStatus", .string, changes: .const),
                Property("CanSave", .boolean),
                Property("LastError", .string),
            ],
            signals: [
                SignalDecl("ShelvesChanged"),
                SignalDecl("BookChanged", [("id", .int64)]),
                SignalDecl("BookRemoved", [("id", .int64)]),
                SignalDecl("ImportProgress", [("job", .uint32), ("done", .uint32), ("total", .uint32), ("path", .string)]),
                SignalDecl("ImportFinished", [("job", .uint32), ("books", .array(.int64)), ("error", .string),
                                               ("skipped", .array(Self.skippedEntry))]),
            ])
    }

    /// Starts an import job (announced: ``announce(_:)``).
    private func startImport(path: String, shelfPath: String) async throws -> UInt32 {
        try await imports.start(path: path, shelfPath: shelfPath) { [self] event in await announce(event) }
    }

    /// An import's progress and end as ImportProgress and ImportFinished, and the books it made as BookChanged,
    /// BookCount and ShelvesChanged: a client's import, and a watched library folder's (``LibraryFolders``). The
    /// current book, when among them, is told of it (it may open its files again where they are now), unless the
    /// import was `forOpening`: what is opened is activated next.
    public func announce(_ event: ImportJobs.Event, forOpening: Bool = false) async {
        switch event {
        case .progress(let job, let progress):
            emit(Self.libraryInterface, "ImportProgress", [.uint32(job), .uint32(UInt32(clamping: progress.done)),
                                                           .uint32(UInt32(clamping: progress.total)), .string(progress.current)])
        case .finished(let job, .success(let books), let skipped):
            for book in books { bookChanged(book) }
            if !forOpening { booksImported(books) }
            await refreshBookCount()
            emit(Self.libraryInterface, "ShelvesChanged")
            emit(Self.libraryInterface, "ImportFinished", [.uint32(job), .array(.int64, books.map(DBusValue.int64)), .string(""),
                                                           Self.encode(skipped)])
        case .finished(let job, .failure(let error), let skipped):
            // A folder that cannot be read is told as D-Bus errors are ("org.freedesktop.DBus.Error.Failed: Cannot read…").
            let told = (error as? OpenError).map { "\(BusError($0))" } ?? "\(error)"
            emit(Self.libraryInterface, "ImportFinished", [.uint32(job), .array(.int64, []), .string(told), Self.encode(skipped)])
        }
    }

    /// What an import left out, one (kind, count, first paths) per kind.
    private static let skippedEntry = DBusType.structure([.string, .uint32, .array(.string)])

    private static func encode(_ skipped: SkippedFiles) -> DBusValue {
        .array(skippedEntry, skipped.all.map { kind, entry in
            .structure([.string(kind.rawValue), .uint32(UInt32(clamping: entry.count)), .array(.string, entry.examples.map(DBusValue.string))])
        })
    }
}
