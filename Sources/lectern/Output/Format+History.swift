import Foundation
import LecternClient

// Undo's places, the listening sessions and their statistics as `lectern undo`, `history` and `stats` show them.
extension Format {
    /// "1:02:03 in file 2 (before a seek)", or for a book change "“Dune”, 1:02:03 in file 2 (before a book change)";
    /// `book` is the place's.
    static func undoPlace(_ place: UndoPlace, in book: BookDetails) -> String {
        let number = book.files.firstIndex { $0.id == place.file }.map { "file \($0 + 1)" } ?? "a file"
        let title = place.kind == "book" ? "“\(book.book.title)”, " : ""
        let what = place.kind == "book" ? "book change" : place.kind == "bookmark" ? "bookmark jump" : place.kind
        return "\(title)\(Clock.format(place.offset)) in \(number) (before a \(what))"
    }

    /// A line a session: when it started, how long, at which speed, the book and the part of it heard.
    static func sessions(_ sessions: [Session]) -> String {
        sessions.map { session in
            "\(Clock.localDate(session.started))  \(Clock.format(session.listened))  \(String(format: "%.2gx", session.speed))  "
                + "\(session.title)  \(Clock.format(session.from))–\(Clock.format(session.to))"
        }.joined(separator: "\n")
    }

    /// The sessions as CSV, with a header: times in seconds.
    static func csv(_ sessions: [Session]) -> String {
        let header = ["book", "title", "started", "ended", "from", "to", "listened", "content", "speed", "silence"]
        return ([header.joined(separator: ",")] + sessions.map { session in
            CSVText.row(["\(session.book)", session.title, Clock.localDate(session.started), Clock.localDate(session.ended),
                         Clock.seconds(session.from), Clock.seconds(session.to), Clock.seconds(session.listened),
                         Clock.seconds(session.content), String(session.speed), Clock.seconds(session.silence)])
        }).joined(separator: "\n")
    }

    /// The totals, then the time per day, per book and per shelf, and the books finished.
    static func stats(_ stats: ListeningStats) -> String {
        var lines = ["listened \(Clock.format(stats.listened)), heard \(Clock.format(stats.content)) of books; "
                     + "speed saved \(Clock.format(stats.savedBySpeed)), skip silence saved \(Clock.format(stats.savedBySilence))"]
        for (title, totals, unnamed) in [("per day", stats.days, "?"), ("per book", stats.books, "?"), ("per shelf", stats.shelves, "(no shelf)")] {
            guard !totals.isEmpty else { continue }
            lines.append(title + ":")
            for total in totals {
                let label = total.label.flatMap { $0.isEmpty ? nil : $0 } ?? unnamed
                lines.append("  \(Clock.format(total.listened))  \(label)"
                             + (total.silence > 0 ? "  (skip silence saved \(Clock.format(total.silence)))" : ""))
            }
        }
        if !stats.finished.isEmpty {
            lines.append("finished:")
            let day = DateFormatter()
            day.dateFormat = "yyyy-MM-dd"
            for book in stats.finished {
                lines.append("  \(day.string(from: Date(timeIntervalSince1970: Double(book.finished) / 1e6)))  \(book.title)")
            }
        }
        return lines.joined(separator: "\n")
    }
}

extension JSON {
    /// A session with its times as `lectern history` prints them: dates in ISO 8601, durations in seconds.
    static func session(_ session: Session) -> [String: Any] {
        ["book": session.book, "title": session.title, "started": Clock.localDate(session.started),
         "ended": Clock.localDate(session.ended), "from": Double(session.from) / 1e6, "to": Double(session.to) / 1e6,
         "listened": Double(session.listened) / 1e6, "content": Double(session.content) / 1e6, "speed": session.speed,
         "silence": Double(session.silence) / 1e6]
    }
}
