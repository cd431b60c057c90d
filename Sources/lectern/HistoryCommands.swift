import ArgumentParser
import DBus
import Foundation

// `lectern undo`, `lectern history` and `lectern stats`: org.lectern.History1.

extension Daemon {
    static let historyInterface = "org.lectern.History1"

    func history(_ method: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await library(method, arguments, interface: Self.historyInterface)
    }
}

struct Undo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Go back to where you were before the last skip, seek, chapter change, jump, bookmark jump or book change.",
        discussion: "Each book keeps its last \(20) such places, also across restarts. Skips or chapter steps less than 10 s apart "
            + "are one move: one undo goes back to before the first. An undo is not itself undone: undo again goes further back.\n\n"
            + examples("lectern undo", "lectern undo --list"))
    @OptionGroup var bus: BusOptions
    @Flag(help: "Show the places undo would go back to, newest first, instead.") var list = false

    func run() async throws {
        let daemon = try await Daemon.connect(bus)
        if list {
            let places = try await daemon.history("ListUndo", [.int64(0)]).first?.elements?.compactMap(\.stringKeyedDictionary) ?? []
            if places.isEmpty { print("nothing to undo") }
            for place in places { print(try await Self.describe(place, daemon)) }
            return
        }
        let place = try await daemon.history("Undo").first?.stringKeyedDictionary ?? [:]
        print("back to " + (try await Self.describe(place, daemon)))
    }

    /// "1:02:03 in file 2 (before a seek)", or for a book change "“Dune”, 1:02:03 in file 2 (before a book change)".
    static func describe(_ place: [String: DBusValue], _ daemon: Daemon) async throws -> String {
        let kind = place["kind"]?.string ?? ""
        let book = place["book"]?.int64 ?? 0
        let details = try await daemon.bookDetails(book)
        let files = details["file_list"]?.elements?.compactMap(\.stringKeyedDictionary) ?? []
        let number = files.firstIndex { $0["id"]?.int64 == place["file"]?.int64 }.map { "file \($0 + 1)" } ?? "a file"
        let title = kind == "book" ? "“\(details["title"]?.string ?? "?")”, " : ""
        let what = kind == "book" ? "book change" : kind == "bookmark" ? "bookmark jump" : kind
        return "\(title)\(Seconds.format(place["offset"]?.int64 ?? 0)) in \(number) (before a \(what))"
    }
}

/// A span of days ending today, as History1's from and to (µs since the epoch; 0: no bound).
struct DaysOption: ParsableArguments {
    @Option(help: "Only the last N days, today included (1 to 36500); default: all.") var days: Int?

    func validate() throws {
        if let days, !(1...36_500).contains(days) { throw ValidationError("--days is 1 to 36500") }
    }

    var span: [DBusValue] {
        guard let days else { return [.int64(0), .int64(0)] }
        let calendar = Calendar.current
        let start = calendar.date(byAdding: .day, value: 1 - days, to: calendar.startOfDay(for: Date())) ?? Date()
        return [.int64(Int64(start.timeIntervalSince1970 * 1_000_000)), .int64(0)]
    }
}

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "history",
        abstract: "The listening sessions: when, which book, which part of it, for how long, at which speed.",
        discussion: "CSV and JSON have the same fields: book (id, 0 when deleted), title, started and ended (ISO 8601, local time), "
            + "from and to (seconds into the book), listened (seconds spent), content (seconds of the book heard), speed, "
            + "silence (seconds of listening skip silence saved).\n\n"
            + examples("lectern history", "lectern history --days 7", "lectern history --book Dune --csv > dune.csv",
                       "lectern history --json | jq '.[].listened'"))
    @OptionGroup var bus: BusOptions
    @OptionGroup var span: DaysOption
    @Option(help: "Only this book (id or title).") var book: String?
    @Flag(help: "Print CSV, with a header.") var csv = false
    @Flag(help: "Print JSON: an array of sessions.") var json = false

    func validate() throws {
        if csv && json { throw ValidationError("--csv or --json, not both") }
    }

    static let fields = ["book", "title", "started", "ended", "from", "to", "listened", "content", "speed", "silence"]

    func run() async throws {
        let daemon = try await Daemon.connect(bus)
        var bookID: Int64 = 0
        if let book { bookID = try await daemon.resolveBook(book) }
        let sessions = try await daemon.history("ListSessions", [.int64(bookID)] + span.span).first?.elements?
            .compactMap(\.stringKeyedDictionary) ?? []
        let dates = ISO8601DateFormatter()
        dates.timeZone = .current
        func date(_ key: String, _ session: [String: DBusValue]) -> String {
            dates.string(from: Date(timeIntervalSince1970: Double(session[key]?.int64 ?? 0) / 1e6))
        }
        func seconds(_ key: String, _ session: [String: DBusValue]) -> Double { Double(session[key]?.int64 ?? 0) / 1e6 }
        if json {
            print(JSON.encode(sessions.map { session -> [String: Any] in
                ["book": session["book"]?.int64 ?? 0, "title": session["title"]?.string ?? "",
                 "started": date("started", session), "ended": date("ended", session), "from": seconds("from", session),
                 "to": seconds("to", session), "listened": seconds("listened", session), "content": seconds("content", session),
                 "speed": session["speed"]?.double ?? 1, "silence": seconds("silence", session)]
            }))
        } else if csv {
            print(Self.fields.joined(separator: ","))
            for session in sessions {
                let us = { (key: String) in BookmarkFiles.seconds(session[key]?.int64 ?? 0) }
                print(["\(session["book"]?.int64 ?? 0)", session["title"]?.string ?? "", date("started", session), date("ended", session),
                       us("from"), us("to"), us("listened"), us("content"), String(session["speed"]?.double ?? 1), us("silence")]
                    .map(BookmarkFiles.csvField).joined(separator: ","))
            }
        } else if sessions.isEmpty {
            print("no listening recorded")
        } else {
            for session in sessions {
                let clock = { (key: String) in Seconds.format(session[key]?.int64 ?? 0) }
                print("\(date("started", session))  \(clock("listened"))  \(String(format: "%.2gx", session["speed"]?.double ?? 1))  "
                      + "\(session["title"]?.string ?? "")  \(clock("from"))–\(clock("to"))")
            }
        }
    }
}

struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Time listened per day, per book and per shelf, books finished, and the time listening faster and skip silence saved.",
        discussion: "A session counts on the day it started (local time); a shelf counts the books of the shelves below it. "
            + "What skip silence saved is the listening time the pauses it shortened lost; what the speed saved is the rest of "
            + "the book time heard beyond the time spent.\n\n"
            + examples("lectern stats", "lectern stats --days 7", "lectern stats --json"))
    @OptionGroup var bus: BusOptions
    @OptionGroup var span: DaysOption
    @Flag(help: "Print JSON (times in µs).") var json = false

    func run() async throws {
        let daemon = try await Daemon.connect(bus)
        let stats = try await daemon.history("GetStats", span.span).first?.stringKeyedDictionary ?? [:]
        if json { print(JSON.encode(JSON.plain(stats))); return }
        func clock(_ value: DBusValue?) -> String { Seconds.format(value?.int64 ?? 0) }
        func entries(_ key: String) -> [[String: DBusValue]] { stats[key]?.elements?.compactMap(\.stringKeyedDictionary) ?? [] }
        print("listened \(clock(stats["listened"])), heard \(clock(stats["content"])) of books; "
              + "speed saved \(clock(stats["savedBySpeed"])), skip silence saved \(clock(stats["savedBySilence"]))")
        for (title, key, name) in [("per day", "days", "day"), ("per book", "books", "name"), ("per shelf", "shelves", "name")] {
            let list = entries(key)
            guard !list.isEmpty else { continue }
            print(title + ":")
            for entry in list {
                let label = entry[name]?.string.flatMap { $0.isEmpty ? nil : $0 } ?? (key == "shelves" ? "(no shelf)" : "?")
                let silence = entry["silence"]?.int64 ?? 0
                print("  \(clock(entry["listened"]))  \(label)" + (silence > 0 ? "  (skip silence saved \(clock(entry["silence"])))" : ""))
            }
        }
        let finished = entries("finished")
        if !finished.isEmpty {
            print("finished:")
            let day = DateFormatter()
            day.dateFormat = "yyyy-MM-dd"
            for entry in finished {
                let at = Date(timeIntervalSince1970: Double(entry["finished"]?.int64 ?? 0) / 1e6)
                print("  \(day.string(from: at))  \(entry["title"]?.string ?? "")")
            }
        }
    }
}
