import ArgumentParser
import DBus
import Foundation

// `lectern skip`, `jump`, `chapter`, `speed`, `sleep`: listening to a book through org.lectern.Player1; `loudness`: a
// book's normalisation, and `compressor`: its speech compressor, through org.lectern.Library1.
// Files and chapters are numbered from 1 here (the API counts from 0).

extension Daemon {
    static let listeningInterface = "org.lectern.Player1"

    @discardableResult
    func listening(_ method: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await library(method, arguments, interface: Self.listeningInterface)
    }

    func listeningStatus() async throws -> [String: DBusValue] {
        try await listening("GetStatus").first?.stringKeyedDictionary ?? [:]
    }
}

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
        let daemon = try await Daemon.connect(bus)
        switch offset[0] {
        case "forward", "fwd", "+": try await daemon.listening("SkipForward")
        case "back", "backward", "-": try await daemon.listening("SkipBackward")
        default:
            guard let microseconds = Seconds.parse(offset[0]), offset[0].first == "+" || offset[0].first == "-" else {
                throw ValidationError("skip takes a signed number of seconds (+15, -15, +1:30), forward or back")
            }
            try await daemon.listening("Skip", [.int64(microseconds)])
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
        guard let microseconds = Seconds.parse(position), microseconds >= 0 else {
            throw ValidationError("the position is a number of seconds (or m:ss) from the start of the file")
        }
        try await Daemon.connect(bus).listening("JumpToFile", [.int32(Int32(file - 1)), .int64(microseconds)])
    }
}

struct ChapterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "chapter",
        abstract: "Go to the next or previous chapter, or chapter N (from 1); without an argument, show the chapter.",
        discussion: examples("lectern chapter", "lectern chapter next", "lectern chapter 4"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "next, previous, or a chapter number from 1.") var target: String?

    func run() async throws {
        let daemon = try await Daemon.connect(bus)
        switch target {
        case nil:
            let status = try await daemon.listeningStatus()
            guard let chapter = status["chapter"]?.int64, let count = status["chapters"]?.int64 else {
                throw CLIError("nothing is loaded")
            }
            print("\(chapter + 1)/\(count) \(status["chapterTitle"]?.string ?? "")")
        case "next"?: try await daemon.listening("NextChapter")
        case "previous"?, "prev"?: try await daemon.listening("PreviousChapter")
        case let text?:
            guard let number = Int32(text), number >= 1 else {
                throw ValidationError("chapter takes next, previous, or a chapter number from 1")
            }
            try await daemon.listening("GoToChapter", [.int32(number - 1)])
        }
    }
}

struct Speed: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show or set the playback speed (0.5 to 3.0, pitch kept); saved with the book.",
        discussion: examples("lectern speed", "lectern speed 1.5"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "The new speed, e.g. 1.5.") var speed: Double?

    func run() async throws {
        let daemon = try await Daemon.connect(bus)
        guard let speed else {
            let value = try await daemon.lecternProperty(Daemon.listeningInterface, "Speed").double ?? 1
            print(String(format: "%.2gx", value))
            return
        }
        guard speed.isFinite, (0.5...3).contains(speed) else { throw ValidationError("the speed is between 0.5 and 3.0") }
        try await daemon.call(Daemon.busName, "/org/lectern/Lectern1", "org.freedesktop.DBus.Properties", "Set",
                              [.string(Daemon.listeningInterface), .string("Speed"), .variant(.double(speed))])
    }
}

struct SleepCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sleep",
        abstract: "Stop playing after a while (20m, 1h30m, 90s), at the end of the chapter (chapter), or cancel (off).",
        discussion: examples("lectern sleep 20m", "lectern sleep chapter", "lectern sleep off"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "A duration (20m, 1h, 90s, 45 = minutes), chapter or off; without one, show the timer.") var when: String?

    func run() async throws {
        let daemon = try await Daemon.connect(bus)
        switch when {
        case nil:
            let status = try await daemon.listeningStatus()
            print(StatusReport.sleepLine(status) ?? "no sleep timer")
        case "off"?, "cancel"?: try await daemon.listening("CancelSleepTimer")
        case "chapter"?, "end-of-chapter"?: try await daemon.listening("SleepAtChapterEnd")
        case let text?:
            guard let microseconds = Self.duration(text), microseconds > 0 else {
                throw ValidationError("sleep takes a duration like 20m, 1h30m or 90s, chapter, or off")
            }
            try await daemon.listening("SetSleepTimer", [.int64(microseconds)])
        }
    }

    /// "20m", "1h30m", "90s", "1h", "45" (minutes) → microseconds.
    static func duration(_ text: String) -> Int64? {
        if let minutes = Double(text), minutes.isFinite, minutes > 0, minutes < 10_000 { return Int64(minutes * 60_000_000) }
        var total = 0.0
        var number = ""
        for character in text.lowercased() {
            if character.isNumber || character == "." { number.append(character); continue }
            guard let value = Double(number), value.isFinite else { return nil }
            switch character {
            case "h": total += value * 3600
            case "m": total += value * 60
            case "s": total += value
            default: return nil
            }
            number = ""
        }
        guard number.isEmpty, total > 0, total < 1_000_000 else { return nil }
        return Int64(total * 1_000_000)
    }
}

struct LoudnessCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "loudness",
        abstract: "Show or set a book's loudness normalisation (to -18 LUFS, or lecternd's loudness-target; off by default), or measure its loudness again.",
        discussion: examples("lectern loudness", "lectern loudness on", "lectern loudness off", "lectern loudness measure",
                             "lectern loudness on --book Dune")
            + "\n\nTurning it on for a book never measured measures it first, in the background (`lectern loudness` shows "
            + "when it is done); until then, and for a book that cannot be measured (all silence, a damaged file), it "
            + "plays at its own level. Off plays the book exactly as recorded.")
    @OptionGroup var bus: BusOptions
    @Option(help: "The book (its id, or words of its title); default: the current book.") var book: String?
    @Argument(help: "on, off or measure; without one, show the book's loudness.") var action: String?

    func validate() throws {
        guard action.map(["on", "off", "measure"].contains) ?? true else {
            throw ValidationError("loudness takes on, off or measure; not \(action!)")
        }
    }

    func run() async throws {
        let daemon = try await Daemon.connect(bus)
        let id = try await daemon.resolveBookOrCurrent(book)
        switch action {
        case "on"?, "off"?:
            try await daemon.setBookSettings(id, ["normalise": .boolean(action == "on")])
        case "measure"?:
            try await daemon.library("MeasureLoudness", [.int64(id)])
        default:
            let details = try await daemon.bookDetails(id)
            print(Self.describe(details))
        }
    }

    /// "normalisation on: -23.1 LUFS, +5.1 dB", or what is known of its loudness.
    static func describe(_ book: [String: DBusValue]) -> String {
        let normalise = book["normalise"]?.bool ?? false
        let measured: String
        if let loudness = book["loudness"]?.double {
            measured = String(format: "%.1f LUFS", loudness)
        } else if let problem = book["loudness_problem"]?.string {
            measured = "not measurable (\(problem)): unity gain"
        } else {
            measured = "not measured yet"
        }
        let gain = book["loudness_gain"]?.double ?? 0
        let target = book["loudness_target"]?.double.map { String(format: " to %.0f LUFS", $0) } ?? ""
        return "normalisation \(normalise ? "on" : "off"): \(measured)"
            + (normalise && gain != 0 ? String(format: ", %+.1f dB", gain) + target : "")
    }
}

struct CompressorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "compressor",
        abstract: "Show or set a book's speech compressor (off by default): quiet passages brought up, loud ones down.",
        discussion: examples("lectern compressor", "lectern compressor on", "lectern compressor off --book Dune")
            + "\n\nFor uneven recordings: the level around the loudness target (-18 LUFS, or lecternd's loudness-target) "
            + "stays, quieter speech comes up by up to 4 dB and louder speech goes down (3:1). Best with `lectern "
            + "loudness on`, which brings the book to that level first. Off plays the book exactly as recorded.")
    @OptionGroup var bus: BusOptions
    @Option(help: "The book (its id, or words of its title); default: the current book.") var book: String?
    @Argument(help: "on or off; without one, show whether it is on.") var action: String?

    func validate() throws {
        guard action.map(["on", "off"].contains) ?? true else {
            throw ValidationError("compressor takes on or off; not \(action!)")
        }
    }

    func run() async throws {
        let daemon = try await Daemon.connect(bus)
        let id = try await daemon.resolveBookOrCurrent(book)
        if let action {
            try await daemon.setBookSettings(id, ["compress": .boolean(action == "on")])
        } else {
            let details = try await daemon.bookDetails(id)
            print("compressor \(details["compress"]?.bool == true ? "on" : "off")")
        }
    }
}
