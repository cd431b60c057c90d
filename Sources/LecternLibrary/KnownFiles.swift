import Foundation
import GRDB

/// The library's files that an import's files may be: those at the same paths, and those with the same
/// fingerprints (in any book), with what is on disk now. Read in the import's transaction.
struct KnownFiles {
    /// Rows at each imported path.
    private var byPath: [String: [BookFile]] = [:]
    /// Rows with each imported file's fingerprint.
    private var byFingerprint: [String: [BookFile]] = [:]
    /// The fingerprint of each imported file that has one.
    private var imported: [String: String] = [:]
    private let importedPaths: Set<String>

    init(_ db: Database, _ files: [ImportedBook.File]) throws {
        importedPaths = Set(files.map(\.path))
        let atPath = try db.cachedStatement(sql: "SELECT * FROM bookFile WHERE path = ?")
        let withFingerprint = try db.cachedStatement(sql: "SELECT * FROM bookFile WHERE fingerprint = ?")
        for file in files {
            byPath[file.path] = try BookFile.fetchAll(atPath, arguments: [file.path])
            guard let value = file.fingerprint?.value else { continue }
            imported[file.path] = value
            if byFingerprint[value] == nil { byFingerprint[value] = try BookFile.fetchAll(withFingerprint, arguments: [value]) }
        }
    }

    /// Whether the content `row` was read from is no longer at its path: the path is gone, holds another file
    /// (by size, or by fingerprint when this import has it), or is an unknown file of this import.
    func hasLeft(_ row: BookFile) -> Bool {
        if importedPaths.contains(row.path) {
            guard let now = imported[row.path] else { return false }
            return now != row.identity
        }
        guard let stamp = FileFingerprint.stamp(of: row.path) else { return true }
        return row.size.map { $0 != stamp.size } ?? false
    }

    /// Whether the imported file at `path` is already a row there, with the same content.
    private func isKnownAtItsPath(_ path: String) -> Bool {
        guard let value = imported[path] else { return false }
        return byPath[path]?.contains { $0.identity == value } ?? false
    }

    /// Rows of which the imported file at `path` is a copy: the same fingerprint, in another folder, still there.
    private func originals(of path: String) -> [BookFile] {
        guard let value = imported[path], let rows = byFingerprint[value], !rows.isEmpty, !isKnownAtItsPath(path) else { return [] }
        let folder = Self.folder(of: path)
        return rows.filter { Self.folder(of: $0.path) != folder && !hasLeft($0) }
    }

    /// The book that has every one of the files already, from another folder still there (the import is a copy).
    func bookHoldingEveryFile() -> Int64? {
        var books: Set<Int64>?
        for path in importedPaths.sorted() {
            let holding = Set(originals(of: path).map(\.bookId))
            books = books.map { $0.intersection(holding) } ?? holding
            if books?.isEmpty != false { return nil }
        }
        return books?.min()
    }

    /// Books with files found again, by path (whatever their content now) or moved (by fingerprint), with how many,
    /// most first.
    func booksByFilesFound() -> [(book: Int64, files: Int)] {
        var counts: [Int64: Int] = [:]
        for path in importedPaths {
            var books = Set((byPath[path] ?? []).map(\.bookId))
            if let value = imported[path] {
                books.formUnion((byFingerprint[value] ?? []).filter { $0.path != path && hasLeft($0) }.map(\.bookId))
            }
            for book in books { counts[book, default: 0] += 1 }
        }
        return counts.map { (book: $0.key, files: $0.value) }.sorted { $0.files != $1.files ? $0.files > $1.files : $0.book < $1.book }
    }

    /// `files` less the copies of files of `book` (another folder, still there) and repeats of an earlier file of
    /// `files` from another folder; the paths left out.
    func leavingOutCopies(in book: Int64, _ files: [ImportedBook.File]) -> (kept: [ImportedBook.File], copies: [String]) {
        var kept: [ImportedBook.File] = []
        var copies: [String] = []
        // The first path kept of each fingerprint.
        var first: [String: String] = [:]
        for file in files {
            guard let value = imported[file.path] else { kept.append(file); continue }
            let repeated = first[value].map { Self.folder(of: $0) != Self.folder(of: file.path) } == true && !isKnownAtItsPath(file.path)
            if repeated || originals(of: file.path).contains(where: { $0.bookId == book }) {
                copies.append(file.path)
                continue
            }
            if first[value] == nil { first[value] = file.path }
            kept.append(file)
        }
        return (kept, copies)
    }

    /// Which of the book's `rows` each file is (by path), or none (a new file): the same path with the same
    /// content; else a row with its fingerprint whose file left its path (renamed, moved; the same file name
    /// first, then in book order); else the same path (re-tagged or replaced). A file moved onto the path of a
    /// row that nothing else took is that row's, so that no two rows end with one path.
    func match(_ files: [ImportedBook.File], to rows: [BookFile]) -> [String: BookFile] {
        var matched: [String: BookFile] = [:]
        // A new book's files are all new.
        guard !rows.isEmpty else { return matched }
        var used = Set<Int64>()
        func take(_ file: ImportedBook.File, _ row: BookFile) {
            matched[file.path] = row
            used.insert(row.id!)
        }
        let free = { (row: BookFile) in !used.contains(row.id!) }
        let atPath = Dictionary(grouping: rows, by: \.path)
        let withValue = Dictionary(grouping: rows.filter { $0.identity != nil }, by: { $0.identity! })
        for file in files {
            let value = imported[file.path]
            if let row = atPath[file.path]?.first(where: { free($0) && (value == nil || $0.identity == nil || $0.identity == value) }) {
                take(file, row)
            }
        }
        for file in files where matched[file.path] == nil {
            guard let value = imported[file.path] else { continue }
            let name = (file.path as NSString).lastPathComponent
            let moved = (withValue[value] ?? []).filter { free($0) && hasLeft($0) }
            if let row = moved.first(where: { ($0.path as NSString).lastPathComponent == name }) ?? moved.min(by: { $0.position < $1.position }) {
                take(file, row)
            }
        }
        for file in files where matched[file.path] == nil {
            if let row = atPath[file.path]?.first(where: free) { take(file, row) }
        }
        var changed = true
        while changed {
            changed = false
            for (path, row) in matched where row.path != path {
                guard let holder = atPath[path]?.first(where: free) else { continue }
                used.remove(row.id!)
                matched[path] = holder
                used.insert(holder.id!)
                changed = true
            }
        }
        return matched
    }

    private static func folder(of path: String) -> String { (path as NSString).deletingLastPathComponent }
}

extension BookFile {
    /// The file's fingerprint when it is of the current kind: one of an older kind tells nothing of the file now.
    var identity: String? { fingerprint.flatMap { FileFingerprint.isCurrent($0, path: path) ? $0 : nil } }
}
