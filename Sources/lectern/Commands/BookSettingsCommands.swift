import ArgumentParser
import Foundation
import LecternClient

// A book's sound: `lectern loudness` (its normalisation), `compressor` (its speech compressor), `skip-parts` (the
// intros and outros not played) and `skip-silence` (its pauses shortened). Through org.lectern.Library1's GetBook
// and SetBookSettings.

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
        let client = try await bus.connect()
        let id = try await client.resolveBookOrCurrent(book)
        switch action {
        case "on"?, "off"?:
            var change = BookSettingsChange()
            change.normalise = action == "on"
            try await client.setBookSettings(id, change)
        case "measure"?:
            try await client.measureLoudness(id)
        default:
            print(Format.loudness(try await client.book(id)))
        }
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
        let client = try await bus.connect()
        let id = try await client.resolveBookOrCurrent(book)
        var change = BookSettingsChange()
        change.compress = action.map { $0 == "on" }
        try await client.setBookSettingsOrShow(id, change, Format.compressor)
    }
}

struct SkipPartsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "skip-parts",
        abstract: "Show or set the seconds not played at the start and the end of every file of a book (off by default).",
        discussion: examples("lectern skip-parts", "lectern skip-parts --intro 12 --outro 8", "lectern skip-parts --outro 0",
                             "lectern skip-parts off", "lectern skip-parts --intro 20 --book Dune")
            + "\n\nFor books whose files each open and close with the same announcement. Each is 0 (none) to 600 "
            + "seconds; a file no longer than both plays whole. Saved with the book; positions and bookmarks stay "
            + "in the file's own time, and a seek into a skipped part plays it.")
    @OptionGroup var bus: BusOptions
    @Option(help: "The book (its id, or words of its title); default: the current book.") var book: String?
    @Option(help: "Seconds not played at the start of every file (0 to 600).") var intro: Double?
    @Option(help: "Seconds not played at the end of every file (0 to 600).") var outro: Double?
    @Argument(help: "off: play files whole; without it or the options, show the setting.") var action: String?

    func validate() throws {
        if let action {
            guard action == "off" else { throw ValidationError("skip-parts takes off, --intro or --outro; not \(action)") }
            guard intro == nil, outro == nil else { throw ValidationError("off plays files whole: give it without --intro or --outro") }
        }
        for (name, seconds) in [("intro", intro), ("outro", outro)] {
            if let seconds, !(seconds.isFinite && (0...600).contains(seconds)) {
                throw ValidationError("--\(name) is 0 to 600 seconds; not \(seconds)")
            }
        }
    }

    func run() async throws {
        let client = try await bus.connect()
        let id = try await client.resolveBookOrCurrent(book)
        var change = BookSettingsChange()
        if action == "off" { (change.skipIntro, change.skipOutro) = (0, 0) }
        if let intro { change.skipIntro = intro }
        if let outro { change.skipOutro = outro }
        try await client.setBookSettingsOrShow(id, change, Format.skipParts)
    }
}

struct SkipSilenceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "skip-silence",
        abstract: "Show or set how a book's pauses are shortened (off by default).",
        discussion: examples("lectern skip-silence", "lectern skip-silence on", "lectern skip-silence on --threshold 0.8 --amount 0.5",
                             "lectern skip-silence off --book Dune")
            + "\n\nA pause longer than the threshold (0.1 to 10 seconds of the recording, 0.5 by default) is shortened by "
            + "the amount (0.1 to 1, 0.75 by default) of what lasts beyond it: with the defaults a 2.5 s pause lasts 1 s. "
            + "Never to nothing, so the narration keeps its rhythm; sound is never cut. Saved with the book; positions, "
            + "bookmarks and chapters stay in the recording's own time. `lectern stats` shows the time it saved.")
    @OptionGroup var bus: BusOptions
    @Option(help: "The book (its id, or words of its title); default: the current book.") var book: String?
    @Option(help: "Seconds of a pause kept whole (0.1 to 10).") var threshold: Double?
    @Option(help: "The share of a pause beyond the threshold removed (0.1 to 1).") var amount: Double?
    @Argument(help: "on or off; without it or the options, show the setting.") var action: String?

    func validate() throws {
        guard action.map(["on", "off"].contains) ?? true else {
            throw ValidationError("skip-silence takes on or off; not \(action!)")
        }
        if let threshold, !(threshold.isFinite && (0.1...10).contains(threshold)) {
            throw ValidationError("--threshold is 0.1 to 10 seconds; not \(threshold)")
        }
        if let amount, !(amount.isFinite && (0.1...1).contains(amount)) {
            throw ValidationError("--amount is 0.1 to 1; not \(amount)")
        }
    }

    func run() async throws {
        let client = try await bus.connect()
        let id = try await client.resolveBookOrCurrent(book)
        var change = BookSettingsChange()
        change.skipSilence = action.map { $0 == "on" }
        change.silenceThreshold = threshold
        change.silenceAmount = amount
        try await client.setBookSettingsOrShow(id, change, Format.skipSilence)
    }
}

private extension LecternClient {
    /// Changes some of book `id`'s settings; with no change, prints what `describe` says of the book instead.
    func setBookSettingsOrShow(_ id: Int64, _ change: BookSettingsChange, _ describe: (BookDetails) -> String) async throws {
        if change.isEmpty {
            print(describe(try await book(id)))
        } else {
            try await setBookSettings(id, change)
        }
    }
}
