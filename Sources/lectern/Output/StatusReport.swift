import Foundation
import LecternClient

/// What `lectern status` shows: MPRIS's Player properties, org.lectern.Player1's figures of the book, file and
/// chapter, and what of the library is not there.
struct StatusReport {
    let player: PlayerStatus
    /// org.lectern.Player1's GetStatus.
    let book: ListeningStatus
    /// org.lectern.Library1's OfflineBooks and MissingFiles.
    var offlineBooks = 0, missingFiles = 0

    var status: String { player.playbackStatus }
    var title: String? { player.track.title }
    var artists: [String] { player.track.artists }
    var position: Int64 { player.position }
    var length: Int64? { player.track.length }
    var rate: Double { player.rate }

    /// "library: 2 books offline, 1 file missing"; nil when every book is there.
    var libraryLine: String? {
        let parts = [(offlineBooks, "book", "offline"), (missingFiles, "file", "missing")].filter { $0.0 > 0 }
            .map { count, noun, state in "\(count) \(noun)\(count == 1 ? "" : "s") \(state)" }
        return parts.isEmpty ? nil : "library: " + parts.joined(separator: ", ")
    }

    /// One line for a live view: the status, title and author, the position (as given: it moves while playing) and
    /// the chapter.
    func line(position: Int64) -> String {
        guard let title else { return "\(status): nothing loaded" }
        var parts = ["\(status): \(title)"]
        if let author = artists.first { parts[0] += " — \(author)" }
        parts.append("\(Clock.format(position)) / \(Clock.format(length))")
        if let chapter = book.chapter, let chapters = book.chapters {
            parts.append("chapter \(Int(chapter) + 1)/\(chapters)")
        }
        if rate != 1 { parts.append(String(format: "%.2gx", rate)) }
        if let sleep = Self.sleepLine(book) { parts.append(sleep) }
        return parts.joined(separator: "  ")
    }

    var text: String {
        guard let title else { return (["\(status): nothing loaded"] + [libraryLine].compactMap { $0 }).joined(separator: "\n") }
        var lines = ["\(status): \(title)"]
        let by = [artists.joined(separator: ", "), player.track.album ?? ""].filter { !$0.isEmpty }.joined(separator: " — ")
        if !by.isEmpty { lines.append("  \(by)") }
        lines.append("  \(Clock.format(position)) / \(Clock.format(length))"
                     + String(format: "  volume %.2f  speed %.2gx  loop %@  shuffle %@", player.volume, rate, player.loopStatus,
                              player.shuffle ? "on" : "off"))
        if let file = book.file, let files = book.files {
            lines.append("  file \(Int(file) + 1)/\(files)  \(Clock.format(book.filePosition)) / \(Clock.format(book.fileLength))")
        }
        if let chapter = book.chapter, let chapters = book.chapters {
            lines.append("  chapter \(Int(chapter) + 1)/\(chapters) “\(book.chapterTitle ?? "")”  "
                         + "\(Clock.format(book.chapterPosition)) / \(Clock.format(book.chapterLength))"
                         + (book.chapterRemaining == nil ? "" : "  \(Clock.format(book.chapterRemaining)) left"))
        }
        if book.bookLength != nil {
            lines.append("  book \(Clock.format(book.bookPosition)) / \(Clock.format(book.bookLength))  \(Clock.format(book.remaining)) left"
                         + (rate == 1 ? "" : String(format: " at %.2gx", rate)))
        }
        if let sleep = Self.sleepLine(book) { lines.append("  " + sleep) }
        if let library = libraryLine { lines.append(library) }
        return lines.joined(separator: "\n")
    }

    /// "sleep in 12:00" / "sleep at the end of the chapter (3:10)"; nil without a timer.
    static func sleepLine(_ book: ListeningStatus) -> String? {
        let left = book.sleepTimeLeft.map(Clock.format)
        switch book.sleep {
        case "time"?: return "sleep in \(left ?? "?")"
        case "chapter"?: return "sleep at the end of the chapter" + (left.map { " (\($0))" } ?? "")
        default: return nil
        }
    }

    var json: String {
        var object: [String: Any] = [
            "status": status, "position": Double(position) / 1e6, "volume": player.volume, "rate": rate,
            "loop": player.loopStatus, "shuffle": player.shuffle, "artists": artists, "offlineBooks": offlineBooks,
            "missingFiles": missingFiles,
        ]
        object["title"] = title
        object["album"] = player.track.album
        object["duration"] = length.map { Double($0) / 1e6 }
        object["url"] = player.track.url
        let figures = Self.figures(book)
        if !figures.isEmpty { object["book"] = figures }
        return JSON.encode(object, orElse: "{}")
    }

    /// The book's figures under their GetStatus names, those lecternd gave: numbers from 1, times in seconds.
    private static func figures(_ book: ListeningStatus) -> [String: Any] {
        var figures: [String: Any] = [:]
        for (key, value) in [("status", book.status), ("title", book.title), ("author", book.author),
                             ("chapterTitle", book.chapterTitle), ("sleep", book.sleep)] {
            figures[key] = value
        }
        for (key, value) in [("filePosition", book.filePosition), ("fileLength", book.fileLength),
                             ("chapterPosition", book.chapterPosition), ("chapterLength", book.chapterLength),
                             ("chapterRemaining", book.chapterRemaining), ("bookPosition", book.bookPosition),
                             ("bookLength", book.bookLength), ("remaining", book.remaining), ("sleepTimeLeft", book.sleepTimeLeft)] {
            figures[key] = value.map { Double($0) / 1e6 }
        }
        for (key, value, first) in [("file", book.file, 1), ("files", book.files, 0), ("chapter", book.chapter, 1),
                                    ("chapters", book.chapters, 0)] {
            figures[key] = value.map { Int($0) + first }
        }
        figures["speed"] = book.speed
        figures["book"] = book.book.map(Double.init)
        return figures
    }
}
