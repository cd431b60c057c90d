import ArgumentParser
import Foundation
import LecternClient

/// `lectern lyrics`: the current chapter's lyrics or transcript (MPRIS xesam:asText); with --follow, its synced lines
/// as playback reaches them (org.lectern.Player1's LyricsLineChanged), never by asking on a timer.
struct LyricsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "lyrics",
        abstract: "Show the current chapter's lyrics or transcript (an .lrc file beside its file, or its tags), or its lines as they are heard.",
        discussion: examples("lectern lyrics", "lectern lyrics --follow"))
    @OptionGroup var bus: BusOptions
    @Flag(help: "Print each synced line as playback reaches it, from the daemon's signals (Ctrl-C ends).")
    var follow = false

    func run() async throws {
        let client = try await bus.connect()
        guard follow else {
            let track = try await client.track()
            guard track.url != nil else { throw CLIError("nothing is loaded") }
            guard let text = track.text else {
                throw CLIError("the current chapter has no lyrics or transcript (an .lrc file of the same name beside its file, or its tags)")
            }
            print(text)
            return
        }
        // Subscribed before the current line is read: no line falls between the two.
        let lines = try await client.lyricsLines()
        let current = try await client.lyricsLine()
        // Written at once, also into a pipe (print's buffer would keep lines back).
        func show(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
        if !current.isEmpty { show(current) }
        for try await line in lines where line.index >= 0 {
            show(line.text)
        }
        throw CLIError("lecternd went away", unreachable: true)
    }
}
