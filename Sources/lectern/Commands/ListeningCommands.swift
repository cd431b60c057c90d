import ArgumentParser
import Foundation
import LecternClient

// `lectern skip`, `jump`, `chapter`, `speed`, `sleep`: listening to a book through org.lectern.Player1.
// Files and chapters are numbered from 1 here (the API counts from 0).

struct Skip: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Skip forward or back through the book, across files: +15, -15 (seconds or m:ss), forward, back.",
        discussion: examples("lectern skip -15", "lectern skip +1:00", "lectern skip forward"))
    @OptionGroup var bus: BusOptions
    @Argument(parsing: .captureForPassthrough, help: "+SECONDS, -SECONDS, forward or back (by the daemon's --skip-step).")
    var offset: [String] = []

    func run() async throws {
        let offset = self.offset.filter { $0 != "--" }
        guard offset.count == 1 else { throw ValidationError("skip takes one argument: +15, -15, forward or back") }
        let client = try await bus.connect()
        switch offset[0] {
        case "forward", "fwd", "+": try await client.listening(.skipForward)
        case "back", "backward", "-": try await client.listening(.skipBackward)
        default:
            guard let microseconds = Parse.offset(offset[0]) else {
                throw ValidationError("skip takes a signed number of seconds (+15, -15, +1:30), forward or back")
            }
            try await client.skip(by: microseconds)
        }
    }
}

struct Jump: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Go to a file of the book (from 1) at a second of it.",
        discussion: examples("lectern jump 3", "lectern jump 3 1:20"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "The file's number in the book, from 1.") var file: Int
    @Argument(help: "Seconds into the file (or m:ss).") var position: String = "0"

    func run() async throws {
        guard file >= 1, file <= Int(Int32.max) else { throw ValidationError("files are numbered from 1") }
        guard let microseconds = Parse.position(position) else {
            throw ValidationError("the position is a number of seconds (or m:ss) from the start of the file")
        }
        try await bus.connect().jump(toFile: Int32(file - 1), at: microseconds)
    }
}

struct ChapterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "chapter",
        abstract: "Go to the next or previous chapter, or chapter N (from 1); without an argument, show the chapter.",
        discussion: examples("lectern chapter", "lectern chapter next", "lectern chapter 4"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "next, previous, or a chapter number from 1.") var target: String?

    func run() async throws {
        let client = try await bus.connect()
        switch target {
        case nil:
            let status = try await client.listeningStatus()
            guard let chapter = status.chapter, let count = status.chapters else {
                throw CLIError("nothing is loaded")
            }
            print("\(Int(chapter) + 1)/\(count) \(status.chapterTitle ?? "")")
        case "next"?: try await client.listening(.nextChapter)
        case "previous"?, "prev"?: try await client.listening(.previousChapter)
        case let text?:
            guard let number = Int32(text), number >= 1 else {
                throw ValidationError("chapter takes next, previous, or a chapter number from 1")
            }
            try await client.goToChapter(number - 1)
        }
    }
}

struct Speed: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show or set the playback speed (0.5 to 3.0, pitch kept); saved with the book.",
        discussion: examples("lectern speed", "lectern speed 1.5"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "The new speed, e.g. 1.5.") var speed: Double?

    func run() async throws {
        let client = try await bus.connect()
        guard let speed else {
            print(String(format: "%.2gx", try await client.speed()))
            return
        }
        guard speed.isFinite, (0.5...3).contains(speed) else { throw ValidationError("the speed is between 0.5 and 3.0") }
        try await client.setSpeed(speed)
    }
}

struct SleepCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sleep",
        abstract: "Stop playing after a while (20m, 1h30m, 90s), at the end of the chapter (chapter), or cancel (off).",
        discussion: examples("lectern sleep 20m", "lectern sleep chapter", "lectern sleep off"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "A duration (20m, 1h, 90s, 45 = minutes), chapter or off; without one, show the timer.") var when: String?

    func run() async throws {
        let client = try await bus.connect()
        switch when {
        case nil:
            print(StatusReport.sleepLine(try await client.listeningStatus()) ?? "no sleep timer")
        case "off"?, "cancel"?: try await client.listening(.cancelSleepTimer)
        case "chapter"?, "end-of-chapter"?: try await client.listening(.sleepAtChapterEnd)
        case let text?:
            guard let microseconds = Parse.duration(text), microseconds > 0 else {
                throw ValidationError("sleep takes a duration like 20m, 1h30m or 90s, chapter, or off")
            }
            try await client.setSleepTimer(microseconds)
        }
    }
}
