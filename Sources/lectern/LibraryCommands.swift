import ArgumentParser
import DBus
import Foundation

// The library commands: import, shelves, books, bookmarks, find. They call org.lectern.Library1 and
// org.lectern.Bookmarks1 on /org/lectern/Lectern1 (documented in dbus/org.lectern.Library1.xml).

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Import a folder (or file) into the library: one book per album, subfolders walked.",
        discussion: examples("lectern import ~/Audiobooks", "lectern import ~/Audiobooks/Dune --shelf Fiction",
                             "lectern import     # the library-folders of the configuration"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "The folder or file (default: each of the configuration's library-folders).") var path: String?
    @Option(help: "The shelf to put the books on, as a path: \"Series/Discworld\" (created as needed).") var shelf: String?
    @Flag(help: "Print the imported books as JSON.") var json = false

    func run() async throws {
        let daemon = try await Daemon.connect(bus)
        var folders = [String]()
        if let path {
            folders = [URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).standardizedFileURL.path]
        } else {
            folders = try await daemon.lecternProperty(ConfigCommand.interface, "LibraryFolders").stringArray ?? []
            guard !folders.isEmpty else {
                throw ValidationError("give a folder to import, or set library-folders in the configuration (`lectern config` names its file)")
            }
        }
        var books: [[String: DBusValue]] = []
        var skipped: [String] = []
        for folder in folders {
            let imported = try await importBooks(from: folder, daemon: daemon)
            books += imported.books
            skipped += imported.skipped
        }
        if json {
            print(JSON.encode(books.map(JSON.book)))
            for line in skipped { FileHandle.standardError.write(Data((line + "\n").utf8)) }
        } else {
            print("imported \(books.count) book\(books.count == 1 ? "" : "s")")
            for book in books { print(Format.bookLine(book)) }
            for line in skipped { print(line) }
        }
    }

    /// What ImportFinished says an import left out, a line per kind: "skipped 3 empty files: /a/1.mp3, …".
    static func skippedLines(_ skipped: DBusValue?) -> [String] {
        let phrases = [
            "not-audio": "files that are not audio (by their names)", "empty": "empty files",
            "unreadable": "files or folders that can't be read (permission denied)",
            "special": "FIFOs, devices or sockets (never opened)", "link": "symbolic links (not followed)",
            "other-file-system": "folders on another file system (not entered)", "too-deep": "folders too deep (not entered)",
            "name-not-utf8": "names that are not UTF-8 (rename them to import them)",
            "unplayable": "files that can't be played (damaged, or no audio in them)",
            "copy": "copies of files the library has in another folder",
        ]
        return (skipped?.elements ?? []).compactMap { entry in
            guard let parts = entry.fields, parts.count == 3, let kind = parts[0].string, let count = parts[1].int64 else { return nil }
            let examples = parts[2].stringArray ?? []
            let more = count > examples.count ? ", …" : ""
            return "skipped \(count) \(phrases[kind] ?? kind): " + examples.joined(separator: ", ") + more
        }
    }

    /// Imports `folder` (an absolute path), showing the progress on standard error; the books imported, and what
    /// was left out (``skippedLines(_:)``).
    private func importBooks(from folder: String, daemon: Daemon) async throws -> (books: [[String: DBusValue]], skipped: [String]) {
        let signals = try await daemon.connection.signals(MatchRule(interface: "org.lectern.Library1", path: "/org/lectern/Lectern1"))
        let job = try await daemon.library("Import", [.string(folder), .string(shelf ?? "")]).first?.int64 ?? 0
        // On a terminal a bar that redraws; otherwise a plain line at each tenth of the files.
        let showProgress = isatty(STDERR_FILENO) != 0
        let started = ContinuousClock.now
        var tenthShown = -1
        for await signal in signals where signal.arguments.first?.int64 == job {
            if signal.member == "ImportProgress" {
                let done = signal.arguments[1].int64 ?? 0, total = max(1, signal.arguments[2].int64 ?? 1)
                let seconds = (ContinuousClock.now - started) / .seconds(1)
                let figures = "\(done)/\(total) files, \(Int((Double(done) / max(seconds, 0.001)).rounded())) files/s"
                if showProgress {
                    let width = 30, filled = Int(done) * width / Int(total)
                    let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
                    FileHandle.standardError.write(Data("\r\u{1B}[2K[\(bar)] \(figures)".utf8))
                } else if Int(done * 10 / total) > tenthShown {
                    tenthShown = Int(done * 10 / total)
                    FileHandle.standardError.write(Data("importing: \(figures)\n".utf8))
                }
            } else if signal.member == "ImportFinished" {
                if showProgress { FileHandle.standardError.write(Data("\n".utf8)) }
                let skipped = Self.skippedLines(signal.arguments.count > 3 ? signal.arguments[3] : nil)
                if let error = signal.arguments[2].string, !error.isEmpty {
                    for line in skipped { FileHandle.standardError.write(Data((line + "\n").utf8)) }
                    throw CLIError("import of \(folder) failed: \(error)")
                }
                let ids = signal.arguments[1].elements?.compactMap(\.int64) ?? []
                var books: [[String: DBusValue]] = []
                for id in ids { books.append(try await daemon.bookDetails(id)) }
                return (books, skipped)
            }
        }
        throw CLIError("the daemon went away during the import", unreachable: true)
    }
}

// MARK: - Shelves

struct ShelfCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "shelf", abstract: "List and arrange shelves.",
        discussion: examples("lectern shelf list", "lectern shelf create Fiction"),
        subcommands: [List.self, Create.self, Rename.self, Move.self, Delete.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the shelves as a tree.",
            discussion: examples("lectern shelf list"))
        @OptionGroup var bus: BusOptions
        @Flag(help: "Print JSON.") var json = false
        func run() async throws {
            let shelves = try await Daemon.connect(bus).allShelves()
            if json { print(JSON.encode(shelves.map(JSON.shelf))); return }
            func show(_ parent: Int64, _ depth: Int) {
                for shelf in shelves.filter({ $0["parent"]?.int64 == parent }).sorted(by: { ($0["name"]?.string ?? "") < ($1["name"]?.string ?? "") }) {
                    print(String(repeating: "  ", count: depth) + "\(shelf["name"]?.string ?? "")  [\(shelf["id"]?.int64 ?? 0)]")
                    show(shelf["id"]?.int64 ?? 0, depth + 1)
                }
            }
            if shelves.isEmpty { print("no shelves") } else { show(0, 0) }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a shelf.",
            discussion: examples("lectern shelf create Fiction", "lectern shelf create Discworld --in Fiction"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The new shelf's name.") var name: String
        @Option(name: .customLong("in"), help: "The parent shelf (id or path); default: the top level.") var parent: String?
        func run() async throws {
            let daemon = try await Daemon.connect(bus)
            let parentID = try await daemon.resolveShelf(optional: parent)
            let id = try await daemon.library("CreateShelf", [.string(name), .int64(parentID)]).first?.int64 ?? 0
            print(id)
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rename a shelf.",
            discussion: examples("lectern shelf rename Fiction Novels"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The shelf (id or path).") var shelf: String
        @Argument(help: "Its new name.") var name: String
        func run() async throws {
            let daemon = try await Daemon.connect(bus)
            try await daemon.library("RenameShelf", [.int64(try await daemon.resolveShelf(shelf)), .string(name)])
        }
    }

    struct Move: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Move a shelf under another one, or to the top level.",
            discussion: examples("lectern shelf move Discworld --to Fiction", "lectern shelf move Discworld"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The shelf (id or path).") var shelf: String
        @Option(help: "The new parent (id or path); omit for the top level.") var to: String?
        func run() async throws {
            let daemon = try await Daemon.connect(bus)
            let id = try await daemon.resolveShelf(shelf)
            let parent = try await daemon.resolveShelf(optional: to)
            try await daemon.library("MoveShelf", [.int64(id), .int64(parent)])
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a shelf; with --recursive, the shelves and books on it too.",
            discussion: examples("lectern shelf delete Empty", "lectern shelf delete Old --recursive"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The shelf (id or path).") var shelf: String
        @Flag(help: "Also delete its shelves and books.") var recursive = false
        func run() async throws {
            let daemon = try await Daemon.connect(bus)
            try await daemon.library("DeleteShelf", [.int64(try await daemon.resolveShelf(shelf)), .boolean(recursive)])
        }
    }
}

// MARK: - Books

struct BookCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "book", abstract: "List, show and arrange books.",
        discussion: examples("lectern book list", "lectern book show Dune"),
        subcommands: [List.self, Show.self, Rename.self, Move.self, Delete.self, Order.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the books: all of them, or one shelf's.",
            discussion: examples("lectern book list", "lectern book list --shelf Fiction --recursive", "lectern book list --sort played",
                                 "lectern book list --json"))
        @OptionGroup var bus: BusOptions
        @Option(help: "Only this shelf (id or path).") var shelf: String?
        @Flag(help: "Include the shelves below it.") var recursive = false
        @Option(help: "title, author, played (recent first), added (recent first), progress (furthest first), modified (recent first) or user.") var sort = "title"
        @Flag(help: "Print JSON.") var json = false
        func run() async throws {
            let daemon = try await Daemon.connect(bus)
            let shelfID = try await daemon.resolveShelf(optional: shelf)
            let books = try await daemon.books(shelf: shelfID, recursive: shelf == nil ? true : recursive, order: sort)
            if json { print(JSON.encode(books.map(JSON.book))) } else if books.isEmpty { print("no books") } else {
                for book in books { print(Format.bookLine(book)) }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a book: its files, chapters, place and settings.",
            discussion: examples("lectern book show Dune", "lectern book show 12 --json"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The book (id or title).") var book: String
        @Flag(help: "Print JSON.") var json = false
        func run() async throws {
            let daemon = try await Daemon.connect(bus)
            let details = try await daemon.bookDetails(try await daemon.resolveBook(book))
            if json { print(JSON.encode(JSON.book(details))); return }
            print(Format.bookLine(details))
            for file in details["file_list"]?.elements ?? [] {
                let f = file.stringKeyedDictionary ?? [:]
                let mark = f["state"]?.string == "missing" ? " (missing)" : ""
                print("  \((f["index"]?.int64 ?? 0) + 1). [\(f["id"]?.int64 ?? 0)] \(f["title"]?.string ?? (f["path"]?.string ?? ""))  \(Seconds.format(f["duration"]?.int64 ?? 0))\(mark)")
                for chapter in f["chapters"]?.elements ?? [] {
                    let c = chapter.stringKeyedDictionary ?? [:]
                    print("       \(Seconds.format(c["start"]?.int64 ?? 0))  \(c["title"]?.string ?? "")")
                }
            }
            if let note = details["note"]?.string, !note.isEmpty { print("note: \(note)") }
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rename a book.",
            discussion: examples("lectern book rename 12 \"Dune Messiah\""))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The book (id or title).") var book: String
        @Argument(help: "Its new title.") var title: String
        func run() async throws {
            let daemon = try await Daemon.connect(bus)
            try await daemon.library("RenameBook", [.int64(try await daemon.resolveBook(book)), .string(title)])
        }
    }

    struct Move: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Move a book to a shelf, or to the top level.",
            discussion: examples("lectern book move Dune --to Fiction", "lectern book move Dune"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The book (id or title).") var book: String
        @Option(help: "The shelf (id or path); omit for the top level.") var to: String?
        func run() async throws {
            let daemon = try await Daemon.connect(bus)
            let id = try await daemon.resolveBook(book)
            let shelf = try await daemon.resolveShelf(optional: to)
            try await daemon.library("MoveBook", [.int64(id), .int64(shelf)])
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a book from the library, with its place and bookmarks (its files stay on disk).",
            discussion: examples("lectern book delete 12"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The book (id or title).") var book: String
        func run() async throws {
            let daemon = try await Daemon.connect(bus)
            try await daemon.library("DeleteBook", [.int64(try await daemon.resolveBook(book))])
        }
    }

    struct Order: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Put a book's files in a new order: every file id, once.",
            discussion: examples("lectern book order 12 5 4 6"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The book (id or title).") var book: String
        @Argument(help: "File ids in the new order (see `lectern book show`).") var files: [Int64]
        func run() async throws {
            let daemon = try await Daemon.connect(bus)
            try await daemon.library("ReorderFiles", [.int64(try await daemon.resolveBook(book)), .array(.int64, files.map(DBusValue.int64))])
        }
    }
}

// MARK: - Bookmarks

struct BookmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bookmark", abstract: "Named places in books, with notes.",
        discussion: examples("lectern bookmark add \"The duel\"", "lectern bookmark list"),
        subcommands: [Add.self, List.self, Rename.self, Note.self, Delete.self, Jump.self, Export.self, Import.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Bookmark where the current book is (or another book's saved place).",
            discussion: examples("lectern bookmark add", "lectern bookmark add \"The duel\" --note \"Reread this\"", "lectern bookmark add --book Dune"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The bookmark's title (default: \"Bookmark at\" and the time).") var title: String?
        @Option(help: "A note to keep with it.") var note: String?
        @Option(help: "The book (id or title); default: the current one.") var book: String?
        func run() async throws {
            let daemon = try await Daemon.connect(bus)
            let bookID = try await daemon.resolveBookOrCurrent(book)
            let id = try await daemon.library("AddBookmark", [.int64(bookID), .string(title ?? ""), .string(note ?? "")],
                                              interface: "org.lectern.Bookmarks1").first?.int64 ?? 0
            print(id)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a book's bookmarks.",
            discussion: examples("lectern bookmark list", "lectern bookmark list --book Dune --json"))
        @OptionGroup var bus: BusOptions
        @Option(help: "The book (id or title); default: the current one.") var book: String?
        @Flag(help: "Print JSON.") var json = false
        func run() async throws {
            let daemon = try await Daemon.connect(bus)
            let bookID = try await daemon.resolveBookOrCurrent(book)
            let marks = try await daemon.library("ListBookmarks", [.int64(bookID)], interface: "org.lectern.Bookmarks1")
                .first?.elements?.compactMap(\.stringKeyedDictionary) ?? []
            if json { print(JSON.encode(marks.map(JSON.plain))); return }
            if marks.isEmpty { print("no bookmarks") }
            for mark in marks {
                let note = mark["note"]?.string ?? ""
                print("[\(mark["id"]?.int64 ?? 0)] \(Seconds.format(mark["offset"]?.int64 ?? 0)) \(mark["title"]?.string ?? "")\(note.isEmpty ? "" : " — " + note)")
            }
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rename a bookmark.",
            discussion: examples("lectern bookmark rename 7 \"The duel\""))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The bookmark's id (see `lectern bookmark list`).") var id: Int64
        @Argument(help: "Its new title.") var title: String
        func run() async throws {
            try await Daemon.connect(bus).library("RenameBookmark", [.int64(id), .string(title)], interface: "org.lectern.Bookmarks1")
        }
    }

    struct Note: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set a bookmark's note.",
            discussion: examples("lectern bookmark note 7 \"Reread before book 2\""))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The bookmark's id (see `lectern bookmark list`).") var id: Int64
        @Argument(help: "The note (\"\" removes it).") var note: String
        func run() async throws {
            try await Daemon.connect(bus).library("SetBookmarkNote", [.int64(id), .string(note)], interface: "org.lectern.Bookmarks1")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a bookmark.",
            discussion: examples("lectern bookmark delete 7"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The bookmark's id (see `lectern bookmark list`).") var id: Int64
        func run() async throws {
            try await Daemon.connect(bus).library("DeleteBookmark", [.int64(id)], interface: "org.lectern.Bookmarks1")
        }
    }

    struct Jump: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Go to a bookmark, making its book the current one.",
            discussion: examples("lectern bookmark jump 7"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The bookmark's id (see `lectern bookmark list`).") var id: Int64
        func run() async throws {
            try await Daemon.connect(bus).library("JumpToBookmark", [.int64(id)], interface: "org.lectern.Bookmarks1")
        }
    }
}

// MARK: - Find

struct Find: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find books: by words anywhere (titles, authors, narrators, series, albums, tags, notes), and options that must match.",
        discussion: examples("lectern find bronte", "lectern find pratch guards --limit 5", "lectern find --author Herbert",
                             "lectern find dune --genre fiction --json", "lectern find --group-by author"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "Words to look for, each the start of a word, case and accents ignored; the best matches first.") var text: [String] = []
    @Option(help: "Part of the title.") var title: String?
    @Option(help: "Part of the author's name.") var author: String?
    @Option(help: "Part of the album.") var album: String?
    @Option(help: "Part of the composer.") var composer: String?
    @Option(help: "Part of the genre.") var genre: String?
    @Option(help: "Show at most this many books (default: every match).") var limit: Int?
    @Option(help: "Group the matches by title, author, album, composer or genre.") var groupBy: String?
    @Option(help: "Pick one at random: book or file.") var random: String?
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit is at least 1") }
        if !text.isEmpty, groupBy != nil || random != nil { throw ValidationError("--group-by and --random take options, not words") }
    }

    func run() async throws {
        let daemon = try await Daemon.connect(bus)
        var query: [String: DBusValue] = [:]
        for (key, value) in [("title", title), ("author", author), ("album", album), ("composer", composer), ("genre", genre)] {
            if let value { query[key] = .string(value) }
        }
        if let groupBy {
            let groups = try await daemon.library("Group", [.vardict(query), .string(groupBy)]).first?.elements ?? []
            let rows = groups.compactMap(\.fields).map { (value: $0[0].string ?? "", books: $0[1].int64 ?? 0) }
            if json { print(JSON.encode(rows.map { ["value": $0.value, "books": $0.books] as [String: Any] })) } else {
                for row in rows { print("\(row.value)  (\(row.books))") }
            }
            return
        }
        if let random {
            let found = try await daemon.library("Random", [.vardict(query), .string(random)]).first?.stringKeyedDictionary ?? [:]
            if json { print(JSON.encode(random == "book" ? JSON.book(found) : JSON.plain(found))) } else {
                print(random == "book" ? Format.bookLine(found) : (found["path"]?.string ?? ""))
            }
            return
        }
        let found = try await daemon.pages("Search", [.string(text.joined(separator: " ")), .vardict(query)], upTo: limit ?? .max)
        if json { print(JSON.encode(found.books.map(JSON.book))) } else if found.books.isEmpty { print("nothing matches") } else {
            for book in found.books { print(Format.bookLine(book)) }
            if found.total > found.books.count { print("… and \(found.total - found.books.count) more") }
        }
    }
}

// MARK: - Resolving names, formatting

extension Daemon {
    func allShelves() async throws -> [[String: DBusValue]] {
        try await library("ListAllShelves").first?.elements?.compactMap(\.stringKeyedDictionary) ?? []
    }

    /// The books of a paged call (ListBooksPage, Search: `arguments` before the offset and the limit), a page after
    /// the other, up to `limit` of them; and how many there are in all.
    func pages(_ method: String, _ arguments: [DBusValue], upTo limit: Int = .max) async throws -> (books: [[String: DBusValue]], total: Int) {
        var books: [[String: DBusValue]] = []
        while true {
            let size = min(200, limit - books.count)
            let reply = try await library(method, arguments + [.uint32(UInt32(clamping: books.count)), .uint32(UInt32(size))])
            guard let listed = reply.first, listed.type.signature == Self.listedSignature,
                  let page = listed.elements?.compactMap(Self.listedBook) else {
                throw CLIError("lecternd lists books in a form this lectern does not read (another version of "
                               + "Lectern): restart lecternd")
            }
            let total = Int(reply.dropFirst().first?.int64 ?? 0)
            books += page
            if page.isEmpty || books.count >= min(total, limit) { return (books, total) }
        }
    }

    /// A book of a listing (a struct, dbus/org.lectern.Library1.xml's ListBooks) by the names of its fields, which
    /// are GetBook's keys.
    static func listedBook(_ value: DBusValue) -> [String: DBusValue]? {
        guard let fields = value.fields, fields.count == listedFields.count else { return nil }
        return Dictionary(uniqueKeysWithValues: zip(listedFields, fields))
    }

    static let listedFields = [
        "id", "shelf", "title", "author", "narrator", "cover", "source", "state", "files", "missing",
        "duration", "position_file", "position_offset", "finished", "added", "modified", "last_played",
    ]
    static let listedSignature = "a(xxssssssuuxxxbxxx)"

    /// Every book on `shelf` (0: the top level) and, when `recursive`, below it, in `order` (ListBooksPage's).
    func books(shelf: Int64, recursive: Bool, order: String = "title") async throws -> [[String: DBusValue]] {
        try await pages("ListBooksPage", [.int64(shelf), .boolean(recursive), .string(order)]).books
    }

    /// Every book whose title holds `text` (case-folded), by title.
    func books(titled text: String) async throws -> [[String: DBusValue]] {
        try await pages("Search", [.string(""), .vardict(["title": .string(text)])]).books
    }

    /// `resolveShelf`, or 0 (the top level) for nil.
    func resolveShelf(optional text: String?) async throws -> Int64 {
        guard let text else { return 0 }
        return try await resolveShelf(text)
    }

    /// A shelf by id, or by its path of names from the top ("Series/Discworld").
    func resolveShelf(_ text: String) async throws -> Int64 {
        if let id = Int64(text) { return id }
        let shelves = try await allShelves()
        var parent: Int64 = 0
        for name in text.split(separator: "/").map(String.init) {
            guard let next = shelves.first(where: { $0["parent"]?.int64 == parent && $0["name"]?.string == name }) else {
                throw CLIError("no shelf \"\(text)\"")
            }
            parent = next["id"]?.int64 ?? 0
        }
        return parent
    }

    /// A book by id, exact title, or a title fragment that matches one book only.
    func resolveBook(_ text: String) async throws -> Int64 {
        if let id = Int64(text) { return id }
        let books = try await self.books(titled: text)
        let lower = text.lowercased()
        if let exact = books.first(where: { ($0["title"]?.string ?? "").lowercased() == lower }) { return exact["id"]?.int64 ?? 0 }
        let matches = books.filter { ($0["title"]?.string ?? "").lowercased().contains(lower) }
        guard matches.count == 1 else {
            throw CLIError(matches.isEmpty ? "no book matches \"\(text)\"" : "\"\(text)\" matches \(matches.count) books: " +
                           matches.prefix(5).map { "[\($0["id"]?.int64 ?? 0)] \($0["title"]?.string ?? "")" }.joined(separator: ", "))
        }
        return matches[0]["id"]?.int64 ?? 0
    }

    /// Book `id` as GetBook gives it: its keys and values.
    func bookDetails(_ id: Int64) async throws -> [String: DBusValue] {
        try await library("GetBook", [.int64(id)]).first?.stringKeyedDictionary ?? [:]
    }

    /// Changes some of book `id`'s settings (SetBookSettings' keys).
    func setBookSettings(_ id: Int64, _ changes: [String: DBusValue]) async throws {
        try await library("SetBookSettings", [.int64(id), .vardict(changes)])
    }

    /// Changes some of book `id`'s settings; with no `changes`, prints what `describe` says of the book instead.
    func setBookSettingsOrShow(_ id: Int64, _ changes: [String: DBusValue],
                               _ describe: ([String: DBusValue]) -> String) async throws {
        if changes.isEmpty {
            print(describe(try await bookDetails(id)))
        } else {
            try await setBookSettings(id, changes)
        }
    }

    func resolveBookOrCurrent(_ text: String?) async throws -> Int64 {
        if let text { return try await resolveBook(text) }
        let current = try await lecternProperty("org.lectern.Library1", "CurrentBook").int64 ?? 0
        guard current != 0 else { throw CLIError("no book is current: name one with --book") }
        return current
    }
}

enum Format {
    static func bookLine(_ book: [String: DBusValue]) -> String {
        let author = book["author"]?.string ?? ""
        let files = book["files"]?.int64 ?? 0
        return "[\(book["id"]?.int64 ?? 0)] \(book["title"]?.string ?? "")\(author.isEmpty ? "" : " — " + author)  "
            + "(\(files) file\(files == 1 ? "" : "s"), \(Seconds.format(book["duration"]?.int64 ?? 0)))"
            + (book["finished"]?.bool == true ? "  finished" : "")
            + (book["state"]?.string == "offline" ? "  offline" : "")
            + ((book["missing"]?.int64 ?? 0) > 0 ? "  \(book["missing"]?.int64 ?? 0) missing" : "")
    }
}

enum JSON {
    static func plain(_ map: [String: DBusValue]) -> [String: Any] { map.mapValues(value) }
    static func book(_ map: [String: DBusValue]) -> [String: Any] { plain(map) }
    static func shelf(_ map: [String: DBusValue]) -> [String: Any] { plain(map) }

    static func value(_ v: DBusValue) -> Any {
        switch v.unwrapped {
        case .string(let s): return s
        case .boolean(let b): return b
        case .double(let d): return d.isFinite ? d : 0
        case .objectPath(let p): return p.rawValue
        case .array(_, let items): return items.map(value)
        case .dictionary(_, _, let entries):
            var out: [String: Any] = [:]
            for entry in entries { out[entry.key.string ?? "\(entry.key)"] = value(entry.value) }
            return out
        case .structure(let fields): return fields.map(value)
        default: return v.int64 ?? "\(v)"
        }
    }

    static func encode(_ object: Any) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("null".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
