import ArgumentParser
import Foundation
import LecternClient

// `lectern undo`, `lectern history` and `lectern stats`: org.lectern.History1.

struct Undo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Go back to where you were before the last skip, seek, chapter change, jump, bookmark jump or book change.",
        discussion: "Each book keeps its last \(20) such places, also across restarts. Skips or chapter steps less than 10 s apart "
            + "are one move: one undo goes back to before the first. An undo is not itself undone: undo again goes further back.\n\n"
            + examples("lectern undo", "lectern undo --list"))
    @OptionGroup var bus: BusOptions
    @Flag(help: "Show the places undo would go back to, newest first, instead.") var list = false

    func run() async throws {
        let client = try await bus.connect()
        if list {
            let places = try await client.undoPlaces(of: 0)
            if places.isEmpty { print("nothing to undo") }
            for place in places { print(Format.undoPlace(place, in: try await client.book(place.book))) }
            return
        }
        let place = try await client.undo()
        print("back to " + Format.undoPlace(place, in: try await client.book(place.book)))
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

    func run() async throws {
        let client = try await bus.connect()
        var bookID: Int64 = 0
        if let book { bookID = try await client.resolveBook(book) }
        let (from, to) = span.span
        let sessions = try await client.sessions(of: bookID, from: from, to: to)
        if json {
            print(JSON.encode(sessions.map(JSON.session)))
        } else if csv {
            print(Format.csv(sessions))
        } else if sessions.isEmpty {
            print("no listening recorded")
        } else {
            print(Format.sessions(sessions))
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
        let (from, to) = span.span
        let stats = try await bus.connect().stats(from: from, to: to)
        print(json ? JSON.encode(JSON.whole(stats.reply)) : Format.stats(stats))
    }
}
