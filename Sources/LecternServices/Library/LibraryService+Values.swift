import DBus
import Foundation
import LecternBooks
import LecternLibrary

// The library's records as D-Bus values (the structs and dictionaries of dbus/org.lectern.Library1.xml), and the few
// arguments that need more than a cast: ids where 0 means none, numbers sent as either type, queries.
extension LibraryService {
    static func optionalID(_ id: Int64) -> Int64? {
        id == 0 ? nil : id
    }

    static func double(_ value: DBusValue, _ name: String) throws -> Double {
        guard let number = value.double ?? value.int64.map(Double.init) else { throw LibraryError.invalidArgument("\(name) is a number") }
        return number
    }

    /// A book's loop as Library1 spells it (the XML's "None, Track, Playlist", MPRIS's words for a chapter and a book).
    static func spelling(of loop: BookSettings.Loop) -> String {
        switch loop {
        case .none: "None"
        case .chapter: "Track"
        case .book: "Playlist"
        }
    }

    static func loop(_ value: DBusValue) throws -> BookSettings.Loop {
        guard let text = value.string else { throw LibraryError.invalidArgument("loop is a string") }
        guard let loop = BookSettings.Loop.allCases.first(where: { spelling(of: $0) == text }) else {
            throw LibraryError.invalidArgument("loop must be None, Track or Playlist")
        }
        return loop
    }

    /// A listing's order, by its name.
    static func sort(_ order: String) throws -> BookSort {
        guard let sort = BookSort(rawValue: order) else {
            throw LibraryError.invalidArgument("order is one of \(BookSort.allCases.map(\.rawValue).joined(separator: ", ")), not '\(order)'")
        }
        return sort
    }

    static func query(_ conditions: [String: DBusValue]) throws -> LibraryQuery {
        var query = LibraryQuery()
        for (key, v) in conditions {
            guard let text = v.string else { throw LibraryError.invalidArgument("query values are strings ('\(key)')") }
            switch key {
            case "title": query.title = text
            case "author": query.author = text
            case "album": query.album = text
            case "composer": query.composer = text
            case "genre": query.genre = text
            case "progress":
                guard let progress = LibraryQuery.Progress(rawValue: text) else {
                    let values = LibraryQuery.Progress.allCases.map(\.rawValue).joined(separator: ", ")
                    throw LibraryError.invalidArgument("progress is one of \(values), not '\(text)'")
                }
                query.progress = progress
            case "series": query.series = text
            default:
                throw LibraryError.invalidArgument("unknown query key '\(key)' (title, author, album, composer, genre, progress, series)")
            }
        }
        return query
    }

    static func time(_ date: Date?) -> DBusValue { .int64(date.map { Int64($0.timeIntervalSince1970 * 1_000_000) } ?? 0) }

    static func encode(_ shelf: Shelf) -> DBusValue {
        .vardict(["id": .int64(shelf.id ?? 0), "parent": .int64(shelf.parentId ?? 0), "name": .string(shelf.name)])
    }

    /// A page as ListBooksPage and Search give it: the books, and how many there are on every page.
    static func encode(_ page: BookPage) -> [DBusValue] {
        [encode(page.books, page.totals), .uint32(UInt32(clamping: page.total))]
    }

    /// Books as the listings give them: an array of ``listedBook`` structs, one a book, its fields ``listedFields``.
    static func encode(_ books: [Book], _ totals: [Int64: BookTotals]) -> DBusValue {
        .array(listedBook, books.map { .structure(listedValues($0, totals[$0.id ?? 0])) })
    }

    /// A book as GetBook and Random give it: what a list shows, by name, and its settings.
    static func encode(_ book: Book, _ totals: BookTotals?) -> DBusValue {
        let listed = zip(listedFields, listedValues(book, totals)).map { (key: $0, value: $1) }
        return .vardict(ordered: (listed + settings(of: book)).sorted { $0.key < $1.key })
    }

    /// What a listing gives of a book, in the order of its struct (dbus/org.lectern.Library1.xml, ListBooks); GetBook
    /// gives the same under these names. A struct rather than a dictionary: a page of 200 books is 44 KB instead of
    /// 105, and libdbus, dbus-daemon and the client each handle 3,400 values instead of 6,800 in containers
    /// (docs/decisions/listing-format.md). Its settings and note are left to GetBook.
    static let listedFields = [
        "id", "shelf", "title", "author", "narrator", "cover", "source", "state", "files", "missing",
        "duration", "position_file", "position_offset", "finished", "added", "modified", "last_played",
    ]

    /// The struct of a listed book: `(xxssssssuuxxxbxxx)`, the types of ``listedFields``.
    static let listedBook = DBusType.structure([
        .int64, .int64, .string, .string, .string, .string, .string, .string, .uint32, .uint32,
        .int64, .int64, .int64, .boolean, .int64, .int64, .int64,
    ])

    /// The values of ``listedFields`` for `book`, with its files' totals (none: no files).
    static func listedValues(_ book: Book, _ totals: BookTotals?) -> [DBusValue] {
        let files = totals?.files ?? 0
        let missing = book.offline ? 0 : files - (totals?.available ?? 0)
        return [
            .int64(book.id ?? 0), .int64(book.shelfId ?? 0), .string(book.title), .string(book.author ?? ""),
            .string(book.narrator ?? ""), .string(book.coverPath ?? ""), .string(book.sourcePath ?? ""),
            .string(book.offline ? "offline" : "available"), .uint32(UInt32(clamping: files)),
            .uint32(UInt32(clamping: missing)), .int64(totals?.duration ?? 0), .int64(book.positionFileId ?? 0),
            .int64(book.positionOffset), .boolean(book.finished), time(book.addedAt), time(book.modifiedAt),
            time(book.lastPlayedAt),
        ]
    }

    /// A book's note, its series, its settings and what is known of its loudness (GetBook's keys beyond a listing's).
    static func settings(of book: Book) -> [(key: String, value: DBusValue)] {
        let target = LoudnessMeter.target.withLock { $0 }
        var entries: [(key: String, value: DBusValue)] = [
            ("compress", .boolean(book.compress)), ("loop", .string(spelling(of: book.loop))),
            ("loudness_gain", .double(20 * log10(book.loudnessGain(target: target)))), ("loudness_target", .double(target)),
            ("normalise", .boolean(book.normalise)), ("note", .string(book.note)), ("shuffle", .boolean(book.shuffle)),
            ("series", .string(book.series ?? "")), ("series_part", .string(book.seriesPart ?? "")),
            ("silence_amount", .double(book.silenceAmount)), ("silence_threshold", .double(book.silenceThreshold)),
            ("skip_intro", .double(book.skipIntro)), ("skip_outro", .double(book.skipOutro)),
            ("skip_silence", .boolean(book.skipSilence)), ("speed", .double(book.speed)), ("volume", .double(book.volume)),
        ]
        if let loudness = book.loudness { entries.append(("loudness", .double(loudness))) }
        if let problem = book.loudnessProblem { entries.append(("loudness_problem", .string(problem))) }
        return entries
    }

    static func encode(_ file: BookFile) -> DBusValue {
        var map: [String: DBusValue] = [
            "id": .int64(file.id ?? 0), "book": .int64(file.bookId), "path": .string(file.path),
            "index": .int64(file.position), "duration": .int64(file.duration ?? 0), "available": .boolean(file.available),
            "state": .string(file.available ? "present" : "missing"),
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

    /// An entry of ImportBookmarks: `file` (its number in the book, from 0), `offset` (µs), `title`; optional `note`,
    /// `kind` and `created` (µs since the epoch), as ListBookmarks gives them.
    static func importedBookmark(_ entry: [String: DBusValue], number: Int, book: Int64, files: [BookFile]) throws -> Bookmark {
        func field<T: DBusDecodable>(_ key: String, _ type: T.Type) throws -> T? {
            guard let value = entry[key] else { return nil }
            guard let typed = T(dbusValue: value) else {
                throw LibraryError.invalidArgument("bookmark \(number): \(key) is a \(T.dbusType), not \(value)")
            }
            return typed
        }
        guard let file = try field("file", Int32.self), let offset = try field("offset", Int64.self),
              let title = try field("title", String.self) else {
            throw LibraryError.invalidArgument("bookmark \(number): file, offset and title are needed")
        }
        guard files.indices.contains(Int(file)), let fileId = files[Int(file)].id else {
            throw LibraryError.invalidArgument("bookmark \(number): the book has no file \(Int(file) + 1) (\(files.count) files)")
        }
        if let duration = files[Int(file)].duration, duration > 0, offset > duration {
            throw LibraryError.invalidArgument("bookmark \(number): file \(Int(file) + 1) is \(Duration.microseconds(duration).clock) "
                                               + "long, \(Duration.microseconds(offset).clock) is past its end")
        }
        var kind = Bookmark.Kind.user
        if let name = try field("kind", String.self) {
            guard let known = Bookmark.Kind(rawValue: name) else {
                throw LibraryError.invalidArgument("bookmark \(number): kind is user, sleepTimer, unplug or stop, not \(name)")
            }
            kind = known
        }
        let created = try field("created", Int64.self).map { Date(timeIntervalSince1970: Double($0) / 1_000_000) } ?? Date()
        return Bookmark(bookId: book, fileId: fileId, offset: offset, title: title, note: try field("note", String.self) ?? "",
                        createdAt: created, kind: kind)
    }

    /// The book `id` with its files and their chapters, read from `library` (on its reader threads: see GetBook).
    static func encodeDetails(_ id: Int64, in library: Library) throws -> DBusValue {
        let book = try library.book(id)
        guard case .dictionary(_, _, var entries) = Self.encode(book, try library.totals(of: [id])[id]) else { return .emptyVardict }
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
