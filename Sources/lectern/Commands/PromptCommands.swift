import ArgumentParser
import Foundation
import LecternClient

/// `lectern say`: lecternd speaks the status, the time left or the chapter (prompts on or off), and it is printed.
struct Say: AsyncParsableCommand {
    enum What: String, ExpressibleByArgument, CaseIterable {
        case status, timeLeft = "time-left", chapter
    }

    static let configuration = CommandConfiguration(
        abstract: "Have lecternd speak the status (book, chapter, state, time left), the time left, or the chapter.",
        discussion: examples("lectern say", "lectern say time-left", "lectern say chapter")
            + "\n\nThe time left is in listening time at the current speed. What is spoken is also printed.")
    @OptionGroup var bus: BusOptions
    @Argument(help: "status (the default), time-left or chapter.") var what: What = .status

    func run() async throws {
        let client = try await bus.connect()
        print(try await client.say(what.rawValue))
        let problem = try await client.promptProblem()
        if !problem.isEmpty { FileHandle.standardError.write(Data("Not heard: \(problem)\n".utf8)) }
    }
}

/// `lectern prompts on|off`: spoken prompts (a new book or chapter, the state after a media key...); alone, whether
/// they are on, their voice, and what keeps them from being heard.
struct PromptsCommand: AsyncParsableCommand {
    enum Switch: String, ExpressibleByArgument, CaseIterable { case on, off }

    static let configuration = CommandConfiguration(commandName: "prompts",
        abstract: "Turn spoken prompts on or off (until lecternd exits; the prompts setting chooses at start), or show them.",
        discussion: examples("lectern prompts on", "lectern prompts off", "lectern prompts"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "on or off; nothing to show the prompts' state.") var state: Switch?

    func run() async throws {
        let client = try await bus.connect()
        if let state { try await client.setPromptsEnabled(state == .on) }
        let enabled = try await client.promptsEnabled()
        let language = try await client.promptLanguage()
        let voice = try await client.promptVoice()
        let problem = try await client.promptProblem()
        print("prompts: \(enabled ? "on" : "off")")
        print("voice: \(language)\(voice.isEmpty ? "" : "+" + voice)")
        if !problem.isEmpty { print("not heard: \(problem)") }
    }
}
