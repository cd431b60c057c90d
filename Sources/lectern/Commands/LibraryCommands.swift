import ArgumentParser
import Foundation
import LecternClient

// The library commands: import, shelves, books, find. They call org.lectern.Library1 (documented in
// dbus/org.lectern.Library1.xml); bookmarks are BookmarkCommands.swift's.

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Import a folder (or file) into the library: one book per album, subfolders walked.",
        discussion: examples("lectern import ~/Audiobooks", "lectern import ~/Audiobooks/Dune --shelf Fiction",
                             "lectern import     # the library-folders of the configuration"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "The folder or file (default: each of the configuration's library-folders).") var path: String?
    @Option(help: "The shelf to put the books on, as a path: \"Series/Discworld\" (created as needed).") var shelf: String?
    @Flag(help: "Print the imported books as JSON.") var json = false

    func run() async throws {
        let client = try await bus.connect()
        var folders = [String]()
        if let path {
            folders = [Parse.path(path)]
        } else {
            folders = try await client.libraryFolders()
            guard !folders.isEmpty else {
                throw ValidationError("give a folder to import, or set library-folders in the configuration (`lectern config` names its file)")
            }
        }
        var books: [BookDetails] = []
        var skipped: [String] = []
        for folder in folders {
            let imported = try await importBooks(from: folder, client: client)
            books += imported.books
            skipped += imported.skipped
        }
        if json {
            print(JSON.encode(books.map { JSON.whole($0.reply) }))
            for line in skipped { FileHandle.standardError.write(Data((line + "\n").utf8)) }
        } else {
            print("imported \(books.count) book\(books.count == 1 ? "" : "s")")
            for book in books { print(Format.bookLine(book.book)) }
            for line in skipped { print(line) }
        }
    }

    /// Imports `folder` (an absolute path), showing the progress on standard error; the books imported, and what
    /// was left out (``Format/skipped(_:)``), a line per kind.
    private func importBooks(from folder: String, client: LecternClient) async throws -> (books: [BookDetails], skipped: [String]) {
        let events = try await client.importEvents()
        let job = try await client.startImport(folder, shelf: shelf ?? "")
        // On a terminal a bar that redraws; otherwise a plain line at each tenth of the files.
        let showProgress = isatty(STDERR_FILENO) != 0
        let started = ContinuousClock.now
        var tenthShown = -1
        for try await event in events {
            switch event {
            case .progress(let progress) where progress.job == job:
                let done = Int64(progress.done), total = max(1, Int64(progress.total))
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
            case .finished(let finished) where finished.job == job:
                if showProgress { FileHandle.standardError.write(Data("\n".utf8)) }
                let skipped = finished.skipped.map(Format.skipped)
                if !finished.error.isEmpty {
                    for line in skipped { FileHandle.standardError.write(Data((line + "\n").utf8)) }
                    throw CLIError("import of \(folder) failed: \(finished.error)")
                }
                var books: [BookDetails] = []
                for id in finished.books { books.append(try await client.book(id)) }
                return (books, skipped)
            case .progress, .finished:
                continue
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
            let shelves = try await bus.connect().shelves()
            if json { print(JSON.encode(shelves.map { JSON.whole($0.reply) })); return }
            print(shelves.isEmpty ? "no shelves" : Format.shelfTree(shelves))
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a shelf.",
            discussion: examples("lectern shelf create Fiction", "lectern shelf create Discworld --in Fiction"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The new shelf's name.") var name: String
        @Option(name: .customLong("in"), help: "The parent shelf (id or path); default: the top level.") var parent: String?
        func run() async throws {
            let client = try await bus.connect()
            print(try await client.createShelf(name, in: try await client.resolveShelf(optional: parent)))
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rename a shelf.",
            discussion: examples("lectern shelf rename Fiction Novels"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The shelf (id or path).") var shelf: String
        @Argument(help: "Its new name.") var name: String
        func run() async throws {
            let client = try await bus.connect()
            try await client.renameShelf(try await client.resolveShelf(shelf), to: name)
        }
    }

    struct Move: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Move a shelf under another one, or to the top level.",
            discussion: examples("lectern shelf move Discworld --to Fiction", "lectern shelf move Discworld"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The shelf (id or path).") var shelf: String
        @Option(help: "The new parent (id or path); omit for the top level.") var to: String?
        func run() async throws {
            let client = try await bus.connect()
            let id = try await client.resolveShelf(shelf)
            try await client.moveShelf(id, to: try await client.resolveShelf(optional: to))
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a shelf; with --recursive, the shelves and books on it too.",
            discussion: examples("lectern shelf delete Empty", "lectern shelf delete Old --recursive"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The shelf (id or path).") var shelf: String
        @Flag(help: "Also delete its shelves and books.") var recursive = false
        func run() async throws {
            let client = try await bus.connect()
            try await client.deleteShelf(try await client.resolveShelf(shelf), recursive: recursive)
        }
    }
}

// MARK: - Books

struct BookCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "book", abstract: "List, show and arrange books.",
        discussion: examples("lectern book list", "lectern book show Dune"),
        subcommands: [List.self, Show.self, Rename.self, Move.self, SeriesOfBook.self, Finished.self, Unfinished.self, Delete.self,
                      Order.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the books: all of them, or one shelf's.",
            discussion: examples("lectern book list", "lectern book list --shelf Fiction --recursive", "lectern book list --sort played",
                                 "lectern book list --in-progress", "lectern book list --json"))
        @OptionGroup var bus: BusOptions
        @Option(help: "Only this shelf (id or path).") var shelf: String?
        @Flag(help: "Include the shelves below it.") var recursive = false
        @Flag var progress: ProgressFlag?
        @Option(help: "title, author, played (recent first), added (recent first), progress (furthest first), modified (recent first), user or series (in series order).")
        var sort = "title"
        @Flag(help: "Print JSON.") var json = false
        func run() async throws {
            let client = try await bus.connect()
            let shelfID = try await client.resolveShelf(optional: shelf)
            let books = try await client.books(shelf: shelfID, recursive: shelf == nil ? true : recursive,
                                               matching: BookQuery(progress: progress?.progress), order: sort)
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
            let client = try await bus.connect()
            let details = try await client.book(try await client.resolveBook(book))
            print(json ? JSON.encode(JSON.whole(details.reply)) : Format.book(details))
        }
    }

    struct SeriesOfBook: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "series",
            abstract: "Put a book in a series, at a part (\"2\", \"2.5\"), or in none; an import then keeps it.",
            discussion: examples("lectern book series \"Mort\" Discworld --part 4", "lectern book series 12 --none"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The book (id or title).") var book: String
        @Argument(help: "The series.") var series: String?
        @Option(help: "Its part in the series, as written (2, 2.5, 0).") var part: String?
        @Flag(help: "In no series.") var none = false
        func validate() throws {
            guard none != (series != nil) else { throw ValidationError("give a series, or --none") }
            if none && part != nil { throw ValidationError("--part needs a series") }
        }
        func run() async throws {
            let client = try await bus.connect()
            try await client.setBookSeries(try await client.resolveBook(book), series ?? "", part: part ?? "")
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rename a book.",
            discussion: examples("lectern book rename 12 \"Dune Messiah\""))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The book (id or title).") var book: String
        @Argument(help: "Its new title.") var title: String
        func run() async throws {
            let client = try await bus.connect()
            try await client.renameBook(try await client.resolveBook(book), to: title)
        }
    }

    struct Move: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move a book to a shelf, or to the top level; or, all at once, the books `lectern book list` shows with a progress flag.",
            discussion: examples("lectern book move Dune --to Fiction", "lectern book move Dune", "lectern book move --finished --to Done",
                                 "lectern book move --in-progress --shelf Inbox --to Reading"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The book (id or title); none with a progress flag.") var book: String?
        @Flag var progress: ProgressFlag?
        @Option(help: "With a progress flag: only the books on this shelf (id or path).") var shelf: String?
        @Flag(help: "With --shelf: the shelves below it too.") var recursive = false
        @Option(help: "The shelf (id or path); omit for the top level.") var to: String?

        func validate() throws {
            if (book == nil) == (progress == nil) {
                throw ValidationError("give a book, or one of --not-started, --in-progress, --finished, --unfinished")
            }
            if book != nil, shelf != nil || recursive { throw ValidationError("--shelf and --recursive go with a progress flag, not a book") }
        }

        func run() async throws {
            let client = try await bus.connect()
            let target = try await client.resolveShelf(optional: to)
            if let book {
                try await client.moveBook(try await client.resolveBook(book), to: target)
            } else if let progress {
                let moved = try await client.moveBooks(shelf: try await client.resolveShelf(optional: shelf), recursive: shelf == nil || recursive,
                                                       matching: BookQuery(progress: progress.progress), to: target)
                print("moved \(moved.count) book\(moved.count == 1 ? "" : "s") to \(to ?? "the top level")")
            }
        }
    }

    struct Finished: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Mark a book finished, as playing it to the end does: it counts in `lectern stats`, and starts over when played.",
            discussion: examples("lectern book finished Dune"))
        @OptionGroup var marked: MarkedBook
        func run() async throws { try await marked.mark(finished: true) }
    }

    struct Unfinished: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Mark a book not finished: it plays on from its place (`lectern stats` still counts when it was finished).",
            discussion: examples("lectern book unfinished Dune"))
        @OptionGroup var marked: MarkedBook
        func run() async throws { try await marked.mark(finished: false) }
    }

    /// The book `lectern book finished` and `unfinished` mark.
    struct MarkedBook: ParsableArguments {
        @OptionGroup var bus: BusOptions
        @Argument(help: "The book (id or title).") var book: String

        func mark(finished: Bool) async throws {
            let client = try await bus.connect()
            try await client.setBookFinished(try await client.resolveBook(book), finished)
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a book from the library, with its place and bookmarks (its files stay on disk).",
            discussion: examples("lectern book delete 12"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The book (id or title).") var book: String
        func run() async throws {
            let client = try await bus.connect()
            try await client.deleteBook(try await client.resolveBook(book))
        }
    }

    struct Order: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Put a book's files in a new order: every file id, once.",
            discussion: examples("lectern book order 12 5 4 6"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The book (id or title).") var book: String
        @Argument(help: "File ids in the new order (see `lectern book show`).") var files: [Int64]
        func run() async throws {
            let client = try await bus.connect()
            try await client.reorderFiles(of: try await client.resolveBook(book), files)
        }
    }
}

// MARK: - Find

struct Find: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find books: by words anywhere (titles, authors, narrators, series, albums, tags, notes), and options that must match.",
        discussion: examples("lectern find bronte", "lectern find pratch guards --limit 5", "lectern find --author Herbert",
                             "lectern find dune --genre fiction --json", "lectern find --in-progress", "lectern find --group-by author"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "Words to look for, each the start of a word, case and accents ignored; the best matches first.") var text: [String] = []
    @Option(help: "Part of the title.") var title: String?
    @Option(help: "Part of the author's name.") var author: String?
    @Option(help: "Part of the album.") var album: String?
    @Option(help: "Part of the composer.") var composer: String?
    @Option(help: "Part of the genre.") var genre: String?
    @Flag var progress: ProgressFlag?
    @Option(help: "Show at most this many books (default: every match).") var limit: Int?
    @Option(help: "Group the matches by title, author, album, composer or genre.") var groupBy: String?
    @Option(help: "Pick one at random: book or file.") var random: String?
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit is at least 1") }
        if !text.isEmpty, groupBy != nil || random != nil { throw ValidationError("--group-by and --random take options, not words") }
    }

    func run() async throws {
        let client = try await bus.connect()
        let query = BookQuery(title: title, author: author, album: album, composer: composer, genre: genre, progress: progress?.progress)
        if let groupBy {
            let groups = try await client.groups(query, by: groupBy)
            if json { print(JSON.encode(groups.map { ["value": $0.value, "books": $0.books] as [String: Any] })) } else {
                for group in groups { print("\(group.value)  (\(group.books))") }
            }
            return
        }
        if let random {
            switch try await client.random(random, query) {
            case .book(let book): print(json ? JSON.encode(JSON.whole(book.reply)) : Format.bookLine(book.book))
            case .file(let file): print(json ? JSON.encode(JSON.whole(file.reply)) : file.path)
            }
            return
        }
        let found = try await client.search(text.joined(separator: " "), query, upTo: limit ?? .max)
        if json { print(JSON.encode(found.books.map(JSON.book))) } else if found.books.isEmpty { print("nothing matches") } else {
            for book in found.books { print(Format.bookLine(book)) }
            if found.total > found.books.count { print("… and \(found.total - found.books.count) more") }
        }
    }
}

struct SeriesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "series",
        abstract: "List the series, or one series' books in order.",
        discussion: examples("lectern series", "lectern series Discworld", "lectern series Discworld --json"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "A series: its books, in order of their parts.") var name: String?
    @Flag(help: "Print JSON.") var json = false
    func run() async throws {
        let client = try await bus.connect()
        guard let name else {
            let series = try await client.allSeries()
            if json {
                print(JSON.encode(series.map { ["series": $0.name, "books": Int($0.books)] as [String: Any] }))
            } else if series.isEmpty {
                print("no series")
            } else {
                for entry in series { print("\(entry.name)  (\(entry.books) book\(entry.books == 1 ? "" : "s"))") }
            }
            return
        }
        let books = try await client.books(shelf: 0, recursive: true, matching: BookQuery(series: name), order: "series")
        guard !books.isEmpty else { throw CLIError("no series \"\(name)\"") }
        var lines: [String] = []
        var found: [[String: Any]] = []
        for book in books {
            let part = try await client.book(book.id).seriesPart
            if json {
                var entry = JSON.book(book)
                entry["series_part"] = part ?? ""
                found.append(entry)
            } else {
                lines.append("\(part.map { "#" + $0 + "  " } ?? "")" + Format.bookLine(book))
            }
        }
        print(json ? JSON.encode(found) : lines.joined(separator: "\n"))
    }
}
