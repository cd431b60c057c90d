import ArgumentParser
import DBus
import Foundation

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
        let daemon = try await Daemon.connect(bus)
        let id = try await daemon.resolveBookOrCurrent(book)
        var changes: [String: DBusValue] = [:]
        if action == "off" { changes = ["skip_intro": .double(0), "skip_outro": .double(0)] }
        if let intro { changes["skip_intro"] = .double(intro) }
        if let outro { changes["skip_outro"] = .double(outro) }
        try await daemon.setBookSettingsOrShow(id, changes, Self.describe)
    }

    /// "skipping the first 12 s and the last 8 s of every file", or "off: files play whole".
    static func describe(_ book: [String: DBusValue]) -> String {
        let intro = book["skip_intro"]?.double ?? 0
        let outro = book["skip_outro"]?.double ?? 0
        guard intro > 0 || outro > 0 else { return "off: files play whole" }
        let parts = [intro > 0 ? "the first \(seconds(intro))" : nil, outro > 0 ? "the last \(seconds(outro))" : nil]
        return "skipping " + parts.compactMap { $0 }.joined(separator: " and ") + " of every file"
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : String(format: "%.1f s", value)
    }
}
