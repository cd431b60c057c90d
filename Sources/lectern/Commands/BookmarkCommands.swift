import ArgumentParser
import Foundation
import LecternClient

// `lectern bookmark`: named places in books, with notes, through org.lectern.Bookmarks1; and bookmark files
// (Files/BookmarkFiles.swift) written and read.

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
            let client = try await bus.connect()
            let bookID = try await client.resolveBookOrCurrent(book)
            print(try await client.addBookmark(to: bookID, title: title ?? "", note: note ?? ""))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a book's bookmarks.",
            discussion: examples("lectern bookmark list", "lectern bookmark list --book Dune --json"))
        @OptionGroup var bus: BusOptions
        @Option(help: "The book (id or title); default: the current one.") var book: String?
        @Flag(help: "Print JSON.") var json = false
        func run() async throws {
            let client = try await bus.connect()
            let marks = try await client.bookmarks(of: try await client.resolveBookOrCurrent(book))
            if json { print(JSON.encode(marks.map { JSON.whole($0.reply) })); return }
            if marks.isEmpty { print("no bookmarks") }
            for mark in marks { print(Format.bookmark(mark)) }
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rename a bookmark.",
            discussion: examples("lectern bookmark rename 7 \"The duel\""))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The bookmark's id (see `lectern bookmark list`).") var id: Int64
        @Argument(help: "Its new title.") var title: String
        func run() async throws {
            try await bus.connect().renameBookmark(id, to: title)
        }
    }

    struct Note: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set a bookmark's note.",
            discussion: examples("lectern bookmark note 7 \"Reread before book 2\""))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The bookmark's id (see `lectern bookmark list`).") var id: Int64
        @Argument(help: "The note (\"\" removes it).") var note: String
        func run() async throws {
            try await bus.connect().setBookmarkNote(id, note)
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a bookmark.",
            discussion: examples("lectern bookmark delete 7"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The bookmark's id (see `lectern bookmark list`).") var id: Int64
        func run() async throws {
            try await bus.connect().deleteBookmark(id)
        }
    }

    struct Jump: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Go to a bookmark, making its book the current one.",
            discussion: examples("lectern bookmark jump 7"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The bookmark's id (see `lectern bookmark list`).") var id: Int64
        func run() async throws {
            try await bus.connect().jumpToBookmark(id)
        }
    }
}

extension BookmarkCommand {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write out bookmarks: a book's, or every book's on a shelf, as JSON (lossless), CSV or Audacity labels.",
            discussion: examples("lectern bookmark export > dune.json", "lectern bookmark export --book Dune --format csv",
                                 "lectern bookmark export --shelf Fiction -o fiction.json",
                                 "lectern bookmark export --book Dune --format audacity -o labels.txt"))
        @OptionGroup var bus: BusOptions
        @Option(help: "The book (id or title); default: the current one.") var book: String?
        @Option(help: "Every book on this shelf (id or path) and on the shelves below it, instead of one book.") var shelf: String?
        @Option(help: "json (lossless), csv, or audacity (one book: labels at the book's time).") var format: BookmarkFormat = .json
        @Option(name: .shortAndLong, help: "Write to this file instead of standard output.") var output: String?

        func run() async throws {
            guard book == nil || shelf == nil else { throw ValidationError("give --book or --shelf, not both") }
            let client = try await bus.connect()
            let ids: [Int64]
            if let shelf {
                ids = try await client.books(shelf: try await client.resolveShelf(shelf), recursive: true).map(\.id)
            } else {
                ids = [try await client.resolveBookOrCurrent(book)]
            }
            guard format != .audacity || ids.count == 1 else {
                throw ValidationError("Audacity labels are one book's: give --book")
            }
            var sets: [(set: BookmarkSet, durations: [Int64])] = []
            for id in ids { sets.append(try await client.bookmarkSet(of: id)) }
            let text = switch format {
            case .json: BookmarkFiles.json(sets.map(\.set))
            case .csv: BookmarkFiles.csv(sets.map(\.set))
            case .audacity: BookmarkFiles.audacity(sets[0].set, durations: sets[0].durations)
            }
            if let output {
                do { try text.write(toFile: output, atomically: true, encoding: .utf8) } catch {
                    throw CLIError("cannot write \(output): \(error.localizedDescription)")
                }
            } else {
                FileHandle.standardOutput.write(Data(text.utf8))
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add bookmarks from a file export wrote (or Audacity labels); those already there are skipped.",
            discussion: examples("lectern bookmark import dune.json", "lectern bookmark import fiction.csv",
                                 "lectern bookmark import labels.txt --book Dune"))
        @OptionGroup var bus: BusOptions
        @Argument(help: "The file: JSON or CSV as export writes them, or Audacity labels (.txt).") var file: String
        @Option(help: "The book to add them to (id or title); default: the book each entry names (JSON, CSV), the current one (Audacity labels).")
        var book: String?
        @Option(help: "json, csv or audacity; default: from the file's extension (.json, .csv, else Audacity labels).")
        var format: BookmarkFormat?

        func run() async throws {
            let text: String
            do { text = try String(contentsOfFile: file, encoding: .utf8) } catch {
                throw CLIError("cannot read \(file): \(error.localizedDescription)")
            }
            let format = format ?? BookmarkFormat(fileName: file)
            let sets = try BookmarkFiles.read(text, as: format)
            guard book == nil || sets.count == 1 else {
                throw ValidationError("the file holds \(sets.count) books' bookmarks: leave --book out, each goes to its book")
            }
            let client = try await bus.connect()
            for var set in sets {
                let target: Int64
                if let book {
                    target = try await client.resolveBook(book)
                } else if format == .audacity {
                    target = try await client.resolveBookOrCurrent(nil)
                } else {
                    target = try await client.libraryBook(titled: set.title, author: set.author)
                }
                if format == .audacity { set = try BookmarkFiles.place(set, durations: try await client.bookmarkSet(of: target).durations) }
                let imported = try await client.importBookmarks(to: target, set.entries.map(\.newBookmark))
                let name = set.title.isEmpty ? "book \(target)" : "“\(set.title)”"
                print("\(name): \(imported.added) added" + (imported.skipped > 0 ? ", \(imported.skipped) already there" : ""))
            }
        }
    }
}

extension LecternClient {
    /// A book's bookmarks, with its files' names and durations (µs), for an export.
    func bookmarkSet(of book: Int64) async throws -> (set: BookmarkSet, durations: [Int64]) {
        let details = try await self.book(book)
        // A file or bookmark without its id (never from lecternd) is no file's: -1 and -2 never meet.
        let ids = details.files.map { $0.id ?? -1 }
        var set = BookmarkSet(title: details.book.title, author: details.book.author.isEmpty ? nil : details.book.author,
                              fileNames: details.files.map { ($0.path as NSString).lastPathComponent })
        for mark in try await bookmarks(of: book) {
            guard let file = ids.firstIndex(of: mark.file ?? -2) else { continue }
            set.entries.append(.init(file: file, offset: mark.offset, title: mark.title, note: mark.note, kind: mark.kind,
                                     created: mark.created))
        }
        return (set, details.files.map(\.duration))
    }
}
