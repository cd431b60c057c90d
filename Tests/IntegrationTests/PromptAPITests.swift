import DBus
import Foundation
import Testing
import TestSupport

/// org.lectern.Prompts1 and the CLI's `lectern say` and `lectern prompts` against the real daemon (a fake sink: what
/// is heard is RouteTests' PromptRouteTests).
@Suite struct PromptAPITests {
    static let interface = "org.lectern.Prompts1"

    @Test func theCLITurnsPromptsOnAndOffAndSaysWhatWasAsked() async throws {
        try await DaemonFixture.with { d in
            let off = try await d.lectern("prompts")
            #expect(off.status == 0 && off.stdout.contains("prompts: off") && off.stdout.contains("voice: en"), "\(off)")
            #expect(try await d.lectern("prompts", "on").stdout.contains("prompts: on"))
            #expect(try await d.prompts("Enabled").bool == true)
            let nothing = try await d.lectern("say")
            #expect(nothing.stdout == "Nothing is loaded.", "\(nothing)")

            try await d.openURI(d.media.long)
            _ = try await d.waitForStatus("Playing")
            let timeLeft = try await d.lectern("say", "time-left")
            #expect(timeLeft.status == 0 && timeLeft.stdout.contains("left in the chapter") && timeLeft.stdout.contains("in the book"),
                    "\(timeLeft)")
            #expect(try await d.lectern("say", "chapter").stdout.hasPrefix("Chapter 1 of 1: "))
            let status = try await d.lectern("say", "status")
            #expect(status.stdout.contains("Playing.") && status.stdout.contains("Chapter 1 of 1"), "\(status)")
            #expect(try await d.lectern("say", "weather").status == 64)
            #expect(await d.errorName { try await d.call("Say", [.string("weather")], interface: Self.interface, path: Lib.path) }
                    == "org.lectern.Error.InvalidArgument")
            #expect(try await d.lectern("prompts", "off").stdout.contains("prompts: off"))
            // Prompts never stopped the book.
            #expect(try await d.status() == "Playing")
        }
    }

    @Test func theVoiceIsSetAndCheckedOverDBus() async throws {
        try await DaemonFixture.with(daemonArguments: ["--prompt-language", "en-us", "--prompt-voice", "f3"]) { d in
            #expect(try await d.prompts("Language").string == "en-us")
            #expect(try await d.prompts("Voice").string == "f3")
            try await d.setPrompts("Voice", .string(""))
            try await d.setPrompts("Language", .string("de"))
            let shown = try await d.lectern("prompts")
            #expect(shown.stdout.hasSuffix("voice: de"), "\(shown)")
            #expect(await d.errorName { try await d.setPrompts("Language", .string("en us; rm")) }
                    == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(await d.errorName { try await d.setPrompts("Language", .string("xx")) } == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(await d.errorName { try await d.setPrompts("Voice", .string("nobody")) } == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(try await d.prompts("Language").string == "de")
        }
    }

    @Test func aMissingEngineIsReportedOnceAndPlaybackGoesOn() async throws {
        let empty = try TemporaryDirectory(prefix: "lectern-no-espeak")
        try await DaemonFixture.with(daemonArguments: ["--prompts"], daemonEnvironment: ["PATH": empty.url.path]) { d in
            let problem = try await poll { try await d.prompts("Problem").string ?? "" } until: { !$0.isEmpty }
            #expect(problem.contains("espeak-ng is not installed"), "\(problem)")
            try await d.openURI(d.media.long)
            #expect(try await d.waitForStatus("Playing") == "Playing")
            try await d.call("PlayPause")
            #expect(try await d.waitForStatus("Paused") == "Paused")
            let said = try await d.lectern("say", "chapter")
            #expect(said.stdout.hasPrefix("Chapter 1 of 1: ") && said.stderr.contains("Not heard: espeak-ng is not installed"),
                    "\(said)")
            try await d.call("PlayPause")
            #expect(try await d.waitForStatus("Playing") == "Playing")
            _ = try await d.waitForPosition(atLeast: 500_000)
            let log = (try? String(contentsOf: d.daemonLog, encoding: .utf8)) ?? ""
            #expect(log.components(separatedBy: "spoken prompts cannot be heard").count == 2, "logged more than once:\n\(log)")
        }
    }
}

extension DaemonFixture {
    /// A property of org.lectern.Prompts1, unwrapped.
    func prompts(_ property: String) async throws -> DBusValue {
        let reply = try await call("Get", [.string(PromptAPITests.interface), .string(property)], interface: MPRIS.properties,
                                   path: Lib.path)
        guard let value = reply.first?.unwrapped else { throw FixtureError("Get \(property) returned \(reply)") }
        return value
    }

    func setPrompts(_ property: String, _ value: DBusValue) async throws {
        try await call("Set", [.string(PromptAPITests.interface), .string(property), .variant(value)], interface: MPRIS.properties,
                       path: Lib.path)
    }
}
