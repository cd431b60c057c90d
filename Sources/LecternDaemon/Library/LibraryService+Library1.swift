import DBus
import Foundation
import LecternLibrary

// org.lectern.Library1, the face: each method decodes its arguments, calls the library (or LibraryRules, ImportJobs)
// and announces what changed. Listings are deferred: read from a snapshot taken in call order, off the call queue.
extension LibraryService {
    var libraryInterfaceDeclaration: Interface {
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
                    let books = try await self.rules.deleteShelf(a[0].int64 ?? 0, recursive: a[1].bool ?? false)
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
                    self.bookChanged(a[0].int64 ?? 0)
                    return []
                },
                method("MoveBook", in: [("id", .int64), ("shelf", .int64)]) { a in
                    try self.library.moveBook(a[0].int64 ?? 0, to: Self.optionalID(a[1]))
                    self.bookChanged(a[0].int64 ?? 0)
                    return []
                },
                method("DeleteBook", in: [("id", .int64)]) { a in
                    try await self.rules.deleteBook(a[0].int64 ?? 0)
                    self.emit(Self.libraryInterface, "BookRemoved", [a[0]])
                    self.refreshBookCount()
                    return []
                },
                method("ReorderFiles", in: [("id", .int64), ("files", .array(.int64))]) { a in
                    try self.library.reorderFiles(of: a[0].int64 ?? 0, (a[1].elements ?? []).compactMap(\.int64))
                    self.bookChanged(a[0].int64 ?? 0)
                    return []
                },
                method("SetBookSettings", in: [("id", .int64), ("settings", dict)]) { a in
                    try await self.rules.changeSettings(of: a[0].int64 ?? 0) { settings in
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
                        if let v = changes["loop"] { settings.loop = try Self.loop(v) }
                    }
                    self.bookChanged(a[0].int64 ?? 0)
                    return []
                },
                method("SetBookNote", in: [("id", .int64), ("note", .string)]) { a in
                    try self.library.setNote(of: a[0].int64 ?? 0, a[1].string ?? "")
                    self.bookChanged(a[0].int64 ?? 0)
                    return []
                },
                method("SetBookFinished", in: [("id", .int64), ("finished", .boolean)]) { a in
                    try self.library.setFinished(a[0].int64 ?? 0, a[1].bool ?? false)
                    self.bookChanged(a[0].int64 ?? 0)
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

    /// Starts an import job; its progress and end are announced as ImportProgress and ImportFinished, and the books
    /// it made as BookChanged, BookCount and ShelvesChanged.
    private func startImport(path: String, shelfPath: String) throws -> UInt32 {
        try imports.start(path: path, shelfPath: shelfPath) { [self] event in
            switch event {
            case .progress(let job, let progress):
                emit(Self.libraryInterface, "ImportProgress", [.uint32(job), .uint32(UInt32(clamping: progress.done)),
                                                               .uint32(UInt32(clamping: progress.total)), .string(progress.current)])
            case .finished(let job, .success(let books)):
                for book in books { bookChanged(book) }
                refreshBookCount()
                emit(Self.libraryInterface, "ShelvesChanged")
                emit(Self.libraryInterface, "ImportFinished", [.uint32(job), .array(.int64, books.map(DBusValue.int64)), .string("")])
            case .finished(let job, .failure(let error)):
                emit(Self.libraryInterface, "ImportFinished", [.uint32(job), .array(.int64, []), .string("\(error)")])
            }
        }
    }
}
