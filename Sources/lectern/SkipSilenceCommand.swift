import ArgumentParser
import DBus
import Foundation

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
        let daemon = try await Daemon.connect(bus)
        let id = try await daemon.resolveBookOrCurrent(book)
        var changes: [String: DBusValue] = [:]
        if let action { changes["skip_silence"] = .boolean(action == "on") }
        if let threshold { changes["silence_threshold"] = .double(threshold) }
        if let amount { changes["silence_amount"] = .double(amount) }
        try await daemon.setBookSettingsOrShow(id, changes, Self.describe)
    }

    /// "on: pauses over 0.5 s shortened by 75 % of the rest", or "off (when on: ...)".
    static func describe(_ book: [String: DBusValue]) -> String {
        let threshold = book["silence_threshold"]?.double ?? 0.5
        let amount = book["silence_amount"]?.double ?? 0.75
        let how = String(format: "pauses over %.1f s shortened by %.0f %% of the rest", threshold, amount * 100)
        return book["skip_silence"]?.bool == true ? "on: \(how)" : "off (when on: \(how))"
    }
}
