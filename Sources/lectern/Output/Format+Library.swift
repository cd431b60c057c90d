import LecternClient

/// What the commands print, as text: a function a thing shown.
enum Format {}

// The library's books, shelves, bookmarks and imports as `lectern book`, `shelf`, `find`, `bookmark` and `import` show
// them.
extension Format {
    /// "[12] Dune — Frank Herbert  (3 files, 21:02:10)", and whether it is finished, offline, missing files.
    static func bookLine(_ book: ListedBook) -> String {
        "[\(book.id)] \(book.title)\(book.author.isEmpty ? "" : " — " + book.author)  "
            + "(\(book.files) file\(book.files == 1 ? "" : "s"), \(Clock.format(book.duration)))"
            + (book.finished ? "  finished" : "")
            + (book.state == "offline" ? "  offline" : "")
            + (book.missing > 0 ? "  \(book.missing) missing" : "")
    }

    /// `lectern book show`: the book's line, its series, its files (from 1) with their chapters, and its note.
    static func book(_ details: BookDetails) -> String {
        var lines = [bookLine(details.book)]
        if let series = details.series { lines.append("series: \(series)\(details.seriesPart.map { " #" + $0 } ?? "")") }
        for file in details.files {
            let mark = file.state == "missing" ? " (missing)" : ""
            lines.append("  \(file.index + 1). [\(file.id ?? 0)] \(file.title ?? file.path)  \(Clock.format(file.duration))\(mark)")
            for chapter in file.chapters {
                lines.append("       \(Clock.format(chapter.start))  \(chapter.title)")
            }
        }
        if !details.note.isEmpty { lines.append("note: \(details.note)") }
        return lines.joined(separator: "\n")
    }

    /// "[7] 1:02:03 The duel — Reread this": a bookmark's id, place in its file, title and note.
    static func bookmark(_ mark: Bookmark) -> String {
        "[\(mark.id)] \(Clock.format(mark.offset)) \(mark.title)\(mark.note.isEmpty ? "" : " — " + mark.note)"
    }

    /// The shelves as a tree, by name, two spaces a level: "Fiction  [3]".
    static func shelfTree(_ shelves: [Shelf]) -> String {
        var lines: [String] = []
        func add(_ parent: Int64, _ depth: Int) {
            for shelf in shelves.filter({ $0.parent == parent }).sorted(by: { ($0.name ?? "") < ($1.name ?? "") }) {
                lines.append(String(repeating: "  ", count: depth) + "\(shelf.name ?? "")  [\(shelf.id)]")
                add(shelf.id, depth + 1)
            }
        }
        add(0, 0)
        return lines.joined(separator: "\n")
    }

    /// What an import left out of one kind: "skipped 3 empty files: /a/1.mp3, …".
    static func skipped(_ files: SkippedFiles) -> String {
        let phrases = [
            "not-audio": "files that are not audio (by their names)", "empty": "empty files",
            "unreadable": "files or folders that can't be read (permission denied)",
            "special": "FIFOs, devices or sockets (never opened)", "link": "symbolic links (not followed)",
            "other-file-system": "folders on another file system (not entered)", "too-deep": "folders too deep (not entered)",
            "name-not-utf8": "names that are not UTF-8 (rename them to import them)",
            "unplayable": "files that can't be played (damaged, or no audio in them)",
            "copy": "copies of files the library has in another folder",
        ]
        let more = files.count > files.paths.count ? ", …" : ""
        return "skipped \(files.count) \(phrases[files.kind] ?? files.kind): " + files.paths.joined(separator: ", ") + more
    }
}
