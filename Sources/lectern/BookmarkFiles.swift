import ArgumentParser
import DBus
import Foundation
import SwiftCSV

/// `lectern bookmark export` and `import`: bookmarks as files, to keep, to move between libraries, or to look at
/// beside the audio in Audacity.
///
/// - JSON, lossless: each book by title and author, its files by name, each bookmark's file (from 1), offset (µs),
///   title, note, kind and creation time (µs since the epoch).
/// - CSV, for spreadsheets: book, author, file (from 1), position (seconds), title, note, kind, created (ISO 8601).
/// - Audacity labels: one book's bookmarks, by title, at their time from the start of the book (seconds),
///   tab-separated.
///
/// An import adds to the book each entry names (by title, and author when given) or to `--book`; the daemon skips a
/// bookmark already there (same file, offset and title), so importing twice adds nothing.
enum BookmarkFormat: String, ExpressibleByArgument, CaseIterable {
    case json, csv, audacity

    /// From a file name: .json, .csv, anything else Audacity labels (.txt).
    init(fileName: String) {
        switch (fileName as NSString).pathExtension.lowercased() {
        case "json": self = .json
        case "csv": self = .csv
        default: self = .audacity
        }
    }
}

/// A book's bookmarks as a file holds them.
struct BookmarkSet {
    struct Entry {
        /// The file's number in the book, from 0.
        var file: Int
        /// Microseconds into the file.
        var offset: Int64
        var title: String
        var note = ""
        var kind: String?
        /// Microseconds since the epoch.
        var created: Int64?
    }
    var title: String
    var author: String?
    var fileNames: [String] = []
    var entries: [Entry] = []
}

extension Daemon {
    /// A book's bookmarks, with its files' names and durations (µs), for an export.
    func bookmarkSet(of book: Int64) async throws -> (set: BookmarkSet, durations: [Int64]) {
        let details = try await bookDetails(book)
        let files = (details["file_list"]?.elements ?? []).compactMap(\.stringKeyedDictionary)
        let ids = files.map { $0["id"]?.int64 ?? -1 }
        var set = BookmarkSet(title: details["title"]?.string ?? "", author: details["author"]?.string.flatMap { $0.isEmpty ? nil : $0 },
                              fileNames: files.map { (($0["path"]?.string ?? "") as NSString).lastPathComponent })
        let marks = try await library("ListBookmarks", [.int64(book)], interface: "org.lectern.Bookmarks1")
            .first?.elements?.compactMap(\.stringKeyedDictionary) ?? []
        for mark in marks {
            guard let file = ids.firstIndex(of: mark["file"]?.int64 ?? -2) else { continue }
            set.entries.append(.init(file: file, offset: mark["offset"]?.int64 ?? 0, title: mark["title"]?.string ?? "",
                                     note: mark["note"]?.string ?? "", kind: mark["kind"]?.string,
                                     created: mark["created"]?.int64))
        }
        return (set, files.map { $0["duration"]?.int64 ?? 0 })
    }
}

enum BookmarkFiles {
    /// The bookmarks' creation times in the files (ISO 8601): one formatter for every row (thread-safe, as Foundation
    /// documents it).
    nonisolated(unsafe) static let timestamps = ISO8601DateFormatter()

    // MARK: Writing

    static func json(_ books: [BookmarkSet]) -> String {
        let objects: [[String: Any]] = books.map { book in
            var object: [String: Any] = ["title": book.title, "files": book.fileNames]
            object["author"] = book.author
            object["bookmarks"] = book.entries.map { entry -> [String: Any] in
                var mark: [String: Any] = ["file": entry.file + 1, "offset": entry.offset, "title": entry.title, "note": entry.note]
                mark["kind"] = entry.kind
                mark["created"] = entry.created
                return mark
            }
            return object
        }
        let data = (try? JSONSerialization.data(withJSONObject: ["lectern-bookmarks": 1, "books": objects],
                                                options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    static let csvHeader = ["book", "author", "file", "position", "title", "note", "kind", "created"]

    static func csv(_ books: [BookmarkSet]) -> String {
        var lines = [csvHeader.joined(separator: ",")]
        for book in books {
            for entry in book.entries {
                let created = entry.created.map { BookmarkFiles.timestamps.string(from: Date(timeIntervalSince1970: Double($0) / 1e6)) }
                lines.append([book.title, book.author ?? "", "\(entry.file + 1)", seconds(entry.offset), entry.title, entry.note,
                              entry.kind ?? "", created ?? ""].map(csvField).joined(separator: ","))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Labels at the book's time (the files before, then the offset); `durations` are the files' in µs.
    static func audacity(_ book: BookmarkSet, durations: [Int64]) -> String {
        book.entries.map { entry in
            let at = seconds(durations.prefix(entry.file).reduce(0, +) + entry.offset)
            let label = entry.title.replacingOccurrences(of: "\t", with: " ").replacingOccurrences(of: "\n", with: " ")
            return "\(at)\t\(at)\t\(label)\n"
        }.joined()
    }

    static func seconds(_ microseconds: Int64) -> String { String(format: "%.6f", Double(microseconds) / 1e6) }

    static func csvField(_ text: String) -> String {
        guard text.contains(where: { ",\"\n\r".contains($0) }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    // MARK: Reading

    static func read(_ text: String, as format: BookmarkFormat) throws -> [BookmarkSet] {
        switch format {
        case .json: return try readJSON(text)
        case .csv: return try readCSV(text)
        case .audacity: return try readAudacity(text)
        }
    }

    private static func readJSON(_ text: String) throws -> [BookmarkSet] {
        guard let root = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              root["lectern-bookmarks"] as? Int == 1, let books = root["books"] as? [[String: Any]] else {
            throw CLIError("not a bookmarks file of lectern's (JSON with \"lectern-bookmarks\": 1)")
        }
        return try books.enumerated().map { n, book in
            guard let title = book["title"] as? String, let marks = book["bookmarks"] as? [[String: Any]] else {
                throw CLIError("book \(n + 1) of the file has no title or no bookmarks list")
            }
            var set = BookmarkSet(title: title, author: book["author"] as? String, fileNames: book["files"] as? [String] ?? [])
            for (m, mark) in marks.enumerated() {
                guard let file = (mark["file"] as? NSNumber)?.intValue, file >= 1, let offset = (mark["offset"] as? NSNumber)?.int64Value,
                      let title = mark["title"] as? String else {
                    throw CLIError("“\(set.title)”, bookmark \(m + 1): file (from 1), offset (µs) and title are needed")
                }
                set.entries.append(.init(file: file - 1, offset: offset, title: title, note: mark["note"] as? String ?? "",
                                         kind: mark["kind"] as? String, created: (mark["created"] as? NSNumber)?.int64Value))
            }
            return set
        }
    }

    private static func readCSV(_ text: String) throws -> [BookmarkSet] {
        let table: CSV<Named>
        do { table = try CSV<Named>(string: text, delimiter: .comma) } catch { throw CLIError("not a CSV file: \(error)") }
        guard ["book", "file", "position", "title"].allSatisfy(table.header.contains) else {
            throw CLIError("the CSV file needs the columns book, file, position and title (as export writes them)")
        }
        var books: [BookmarkSet] = []
        for (n, row) in table.rows.enumerated() {
            let line = n + 2
            guard let file = Int(row["file"] ?? ""), file >= 1, let seconds = Double(row["position"] ?? ""), seconds >= 0,
                  let title = row["title"], let book = row["book"], !book.isEmpty else {
                throw CLIError("line \(line): book, file (from 1), position (seconds) and title are needed")
            }
            let author = row["author"].flatMap { $0.isEmpty ? nil : $0 }
            let created = row["created"].flatMap { BookmarkFiles.timestamps.date(from: $0) }
                .map { Int64(($0.timeIntervalSince1970 * 1e6).rounded()) }
            let entry = BookmarkSet.Entry(file: file - 1, offset: Int64((seconds * 1e6).rounded()), title: title,
                                          note: row["note"] ?? "", kind: row["kind"].flatMap { $0.isEmpty ? nil : $0 },
                                          created: created)
            if let index = books.firstIndex(where: { $0.title == book && $0.author == author }) {
                books[index].entries.append(entry)
            } else {
                books.append(BookmarkSet(title: book, author: author, entries: [entry]))
            }
        }
        return books
    }

    /// Audacity labels: `start <tab> end <tab> label` per line, times in seconds from the start of the book; entries
    /// here hold that time as `offset` with file -1 until the book's files place them (`place(_:durations:)`).
    private static func readAudacity(_ text: String) throws -> [BookmarkSet] {
        var set = BookmarkSet(title: "")
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: true).enumerated() {
            let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count >= 2, let start = Double(fields[0].trimmingCharacters(in: .whitespaces)), start >= 0 else {
                throw CLIError("line \(n + 1): an Audacity label is start, end and text, tab-separated")
            }
            let label = fields.count == 3 ? String(fields[2]).trimmingCharacters(in: .whitespacesAndNewlines) : ""
            set.entries.append(.init(file: -1, offset: Int64((start * 1e6).rounded()), title: label.isEmpty ? "Label" : label))
        }
        return [set]
    }

    /// Entries at a time from the start of the book (Audacity's) placed in the book's files.
    static func place(_ set: BookmarkSet, durations: [Int64]) throws -> BookmarkSet {
        var placed = set
        placed.entries = try set.entries.map { entry in
            guard entry.file < 0 else { return entry }
            var rest = entry.offset
            for (index, duration) in durations.enumerated() {
                if rest < duration || index == durations.count - 1 {
                    guard rest <= duration else { break }
                    return .init(file: index, offset: rest, title: entry.title, note: entry.note)
                }
                rest -= duration
            }
            throw CLIError("the label “\(entry.title)” at \(seconds(entry.offset)) s is past the end of the book")
        }
        return placed
    }

    /// The entries as ImportBookmarks takes them.
    static func arguments(_ set: BookmarkSet) -> DBusValue {
        .array(.dictionary(key: .string, value: .variant), set.entries.map { entry in
            var map: [String: DBusValue] = ["file": .int32(Int32(clamping: entry.file)), "offset": .int64(entry.offset),
                                            "title": .string(entry.title), "note": .string(entry.note)]
            if let kind = entry.kind { map["kind"] = .string(kind) }
            if let created = entry.created { map["created"] = .int64(created) }
            return .vardict(map)
        })
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
            let daemon = try await Daemon.connect(bus)
            let ids: [Int64]
            if let shelf {
                ids = try await daemon.books(shelf: try await daemon.resolveShelf(shelf), recursive: true).compactMap { $0["id"]?.int64 }
            } else {
                ids = [try await daemon.resolveBookOrCurrent(book)]
            }
            guard format != .audacity || ids.count == 1 else {
                throw ValidationError("Audacity labels are one book's: give --book")
            }
            var sets: [(set: BookmarkSet, durations: [Int64])] = []
            for id in ids { sets.append(try await daemon.bookmarkSet(of: id)) }
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
            let daemon = try await Daemon.connect(bus)
            for var set in sets {
                let target: Int64
                if let book {
                    target = try await daemon.resolveBook(book)
                } else if format == .audacity {
                    target = try await daemon.resolveBookOrCurrent(nil)
                } else {
                    target = try await daemon.libraryBook(titled: set.title, author: set.author)
                }
                if format == .audacity { set = try BookmarkFiles.place(set, durations: try await daemon.bookmarkSet(of: target).durations) }
                let reply = try await daemon.library("ImportBookmarks", [.int64(target), BookmarkFiles.arguments(set)],
                                                     interface: "org.lectern.Bookmarks1")
                let added = reply.first?.int64 ?? 0, skipped = reply.dropFirst().first?.int64 ?? 0
                let name = set.title.isEmpty ? "book \(target)" : "“\(set.title)”"
                print("\(name): \(added) added" + (skipped > 0 ? ", \(skipped) already there" : ""))
            }
        }
    }
}

extension Daemon {
    /// The library's one book with this title (and author, when given); an error naming the book otherwise.
    func libraryBook(titled title: String, author: String?) async throws -> Int64 {
        let matches = try await books(titled: title).filter { book in
            book["title"]?.string == title && (author == nil || book["author"]?.string == author)
        }
        guard matches.count == 1, let id = matches[0]["id"]?.int64 else {
            throw CLIError(matches.isEmpty ? "no book “\(title)”\(author.map { " by \($0)" } ?? "") in the library: give --book"
                           : "\(matches.count) books are “\(title)”: give --book")
        }
        return id
    }
}
