import ArgumentParser
import Foundation
import LecternClient
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
                lines.append(CSVText.row([book.title, book.author ?? "", "\(entry.file + 1)", Clock.seconds(entry.offset), entry.title,
                                          entry.note, entry.kind ?? "", created ?? ""]))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Labels at the book's time (the files before, then the offset); `durations` are the files' in µs.
    static func audacity(_ book: BookmarkSet, durations: [Int64]) -> String {
        book.entries.map { entry in
            let at = Clock.seconds(durations.prefix(entry.file).reduce(0, +) + entry.offset)
            let label = entry.title.replacingOccurrences(of: "\t", with: " ").replacingOccurrences(of: "\n", with: " ")
            return "\(at)\t\(at)\t\(label)\n"
        }.joined()
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
            throw CLIError("the label “\(entry.title)” at \(Clock.seconds(entry.offset)) s is past the end of the book")
        }
        return placed
    }
}

extension BookmarkSet.Entry {
    /// The entry as ImportBookmarks takes it.
    var newBookmark: NewBookmark {
        NewBookmark(file: Int32(clamping: file), offset: offset, title: title, note: note, kind: kind, created: created)
    }
}
