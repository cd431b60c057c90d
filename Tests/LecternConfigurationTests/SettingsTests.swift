import Foundation
@testable import LecternConfiguration
import LecternCore
import TestSupport
import Testing

/// The configuration: each setting from its flag, else its environment variable, else the file, else its default,
/// with its source; every way a file, a variable or a flag can be wrong named with the key and what it allows.
@Suite struct SettingsTests {
    /// A configuration file with `text`, in a folder of its own.
    final class ConfigFile {
        let folder: TemporaryDirectory
        var path: String { folder.appending("config.yaml").path }

        init(_ text: String? = nil) throws {
            folder = try TemporaryDirectory(prefix: "lectern-settings")
            if let text { try write(text) }
        }

        func write(_ text: String) throws { try text.write(toFile: path, atomically: true, encoding: .utf8) }
        deinit { folder.remove() }
    }

    private func load(_ file: ConfigFile, flags: [Setting: Settings.FlagValue] = [:],
                      environment: [String: String] = [:]) async throws(ConfigurationError) -> Settings {
        try await Settings.load(file: file.path, flags: flags, environment: environment)
    }

    /// The error loading `text` gives; nil when it loads.
    private func error(loading text: String) async throws -> ConfigurationError? {
        let file = try ConfigFile(text)
        do {
            _ = try await load(file)
            return nil
        } catch {
            return error
        }
    }

    @Test func withoutAFileEverySettingHasItsDefault() async throws {
        let file = try ConfigFile()
        let settings = try await load(file, environment: ["HOME": "/home/ann"])
        #expect(settings.file == file.path)
        #expect(Setting.allCases.allSatisfy { settings.entries[$0]?.source == .defaultValue })
        #expect(settings.options.skipStep == .seconds(15))
        #expect(settings.options.outputPolicy == .pauseAndResume)
        #expect(settings.options.resumeWindow == .seconds(1800))
        #expect(settings.options.interruptions == .pause)
        #expect(!settings.options.prompts)
        #expect(settings.options.promptVoice == SpeechVoice(language: "en", variant: nil))
        #expect(settings.options.audioSink == nil)
        #expect(settings.options.titleTemplate == TitleTemplate("{chapter}"))
        #expect(settings.options.listening.smartRewind == SmartRewind())
        #expect(settings.logLevel == .info)
        #expect(settings.options.loudnessTarget == -18)
        #expect(settings.libraryFolders.isEmpty)
        #expect(settings.entries[.audioSink]?.value == "autoaudiosink")
    }

    @Test func everySettingIsReadFromTheFile() async throws {
        let file = try ConfigFile("""
            # Lectern
            library-folders: [/srv/books, ~/Audiobooks]
            audio-sink: pulsesink
            database: /srv/lectern/library.sqlite
            cache-directory: /tmp/lectern-cache
            output-policy: pause-only
            resume-window: 60
            interruptions: ignore
            unplug-bookmark: true
            series-continue: true
            prompts: true
            prompt-language: en-us
            prompt-voice: f3
            skip-step: 30
            smart-rewind: 5-20
            rewind-after: 10
            sleep-fade: 3
            title-template: "{chapter} · {book}"
            log-level: debug
            loudness-target: -23
            network: true
            network-interface: eth0
            """)
        let settings = try await load(file)
        let home = ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()
        #expect(settings.libraryFolders == ["/srv/books", home + "/Audiobooks"])
        #expect(settings.options.audioSink == "pulsesink")
        #expect(settings.options.databasePath == "/srv/lectern/library.sqlite")
        #expect(settings.options.cacheDirectory.path == "/tmp/lectern-cache")
        #expect(settings.options.outputPolicy == .pauseOnly)
        #expect(settings.options.resumeWindow == .seconds(60))
        #expect(settings.options.interruptions == .ignore)
        #expect(settings.options.unplugBookmark)
        #expect(settings.options.seriesContinue)
        #expect(settings.options.prompts)
        #expect(settings.options.promptVoice == SpeechVoice(language: "en-us", variant: "f3"))
        #expect(settings.options.promptVoice.name == "en-us+f3")
        #expect(settings.options.skipStep == .seconds(30))
        #expect(settings.options.listening.smartRewind == SmartRewind(threshold: .seconds(10), minimum: .seconds(5),
                                                                      maximum: .seconds(20), fullAfter: .seconds(3600)))
        #expect(settings.options.listening.sleepFade == .seconds(3))
        #expect(settings.options.titleTemplate == TitleTemplate("{chapter} · {book}"))
        #expect(settings.logLevel == .debug)
        #expect(settings.options.loudnessTarget == -23)
        #expect(settings.options.network)
        #expect(settings.options.networkInterface == "eth0")
        #expect(Setting.allCases.allSatisfy { settings.entries[$0]?.source == .file(file.path) },
                "\(settings.entries.filter { $0.value.source != .file(file.path) })")
    }

    @Test func aFlagWinsOverTheEnvironmentWhichWinsOverTheFile() async throws {
        let file = try ConfigFile("skip-step: 30\noutput-policy: off\nlog-level: warning\n")
        let settings = try await load(file, flags: [.skipStep: .number(45)],
                                      environment: ["LECTERN_SKIP_STEP": "40", "LECTERN_OUTPUT_POLICY": "pause-only"])
        #expect(settings.options.skipStep == .seconds(45))
        #expect(settings.entries[.skipStep] == Settings.Entry(value: "45", source: .flag))
        #expect(settings.options.outputPolicy == .pauseOnly)
        #expect(settings.entries[.outputPolicy] == Settings.Entry(value: "pause-only", source: .environment))
        #expect(settings.logLevel == .warning)
        #expect(settings.entries[.logLevel]?.source == .file(file.path))
        #expect(settings.entries[.sleepFade]?.source == .defaultValue)
        // As `lecternd --print-config` shows them.
        let lines = settings.table.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(lines.contains(["skip-step", "45", "--skip-step"]))
        #expect(lines.contains(["output-policy", "pause-only", "LECTERN_OUTPUT_POLICY"]))
        #expect(lines.contains(["log-level", "warning", Substring(file.path)]))
        #expect(lines.contains(["sleep-fade", "10", "default"]))
        // Several folders in one variable, as in PATH.
        let folders = try await load(file, environment: ["LECTERN_LIBRARY_FOLDERS": "/a:/b c"])
        #expect(folders.libraryFolders == ["/a", "/b c"])
    }

    /// A value out of range, or not of the setting's kind, in the file: the file, the key, the value and what it
    /// allows, for every setting that can be wrong.
    @Test(arguments: [
        ("library-folders: [books]", "library-folders", "\"books\"", "a list of folders, each absolute or starting with ~/"),
        ("library-folders: {a: b}", "library-folders", "a mapping", "a list of folders"),
        ("database: library.sqlite", "database", "\"library.sqlite\"", "a path, absolute or starting with ~/"),
        ("cache-directory: [a]", "cache-directory", "a list", "a path"),
        ("output-policy: pause", "output-policy", "\"pause\"", "pause-and-resume, pause-only, off"),
        ("resume-window: 86401", "resume-window", "86401", "from 0 to 86400"),
        ("interruptions: duck", "interruptions", "\"duck\"", "pause, ignore"),
        ("resume-window: -1", "resume-window", "-1", "from 0 to 86400"),
        ("unplug-bookmark: sometimes", "unplug-bookmark", "\"sometimes\"", "true or false"),
        ("prompts: loud", "prompts", "\"loud\"", "true or false"),
        ("prompt-language: \"en us\"", "prompt-language", "\"en us\"", "an espeak-ng voice name"),
        ("prompt-language: \"\"", "prompt-language", "\"\"", "an espeak-ng voice name"),
        ("prompt-voice: \"f3;rm\"", "prompt-voice", "\"f3;rm\"", "an espeak-ng variant"),
        ("skip-step: 0", "skip-step", "0", "from 1 to 600"),
        ("skip-step: 1.5", "skip-step", "\"1.5\"", "a whole number of seconds"),
        ("smart-rewind: 30-3", "smart-rewind", "\"30-3\"", "off, or MIN-MAX"),
        ("smart-rewind: 3-601", "smart-rewind", "\"3-601\"", "MIN <= MAX <= 600"),
        ("rewind-after: 3601", "rewind-after", "3601", "from 0 to 3600"),
        ("sleep-fade: ten", "sleep-fade", "\"ten\"", "from 0 to 600"),
        ("title-template: [a, b]", "title-template", "a list", "{chapter}, {book}"),
        ("log-level: verbose", "log-level", "\"verbose\"", "trace, debug, info, notice, warning, error, critical"),
        ("loudness-target: -31", "loudness-target", "-31", "a whole number of LUFS from -30 to -10"),
        ("loudness-target: 0", "loudness-target", "0", "a whole number of LUFS from -30 to -10"),
        ("loudness-target: -18.5", "loudness-target", "\"-18.5\"", "a whole number of LUFS from -30 to -10"),
    ])
    func aBadValueNamesTheFileTheKeyAndWhatItAllows(_ line: String, key: String, value: String, allowed: String) async throws {
        let file = try ConfigFile(line + "\n")
        await #expect {
            _ = try await load(file)
        } throws: { error in
            let message = "\(error)"
            return message.hasPrefix("\(file.path): \(key): \(value) is not allowed; \(key) is ") && message.contains(allowed)
        }
    }

    @Test func aFileThatIsNotSettingsIsRefusedWithWhy() async throws {
        let unknown = try await error(loading: "skip-step: 30\nskip-stpe: 30\n")
        #expect(unknown?.description.contains("skip-stpe is not a setting; the settings are library-folders, audio-sink") == true,
                "\(String(describing: unknown))")
        let notYAML = try await error(loading: "skip-step: [30\n")
        #expect(notYAML?.description.contains("not valid YAML") == true && notYAML?.description.contains("line 1") == true,
                "\(String(describing: notYAML))")
        let list = try await error(loading: "- skip-step\n- 30\n")
        #expect(list?.description.contains("expected one setting per line, as \"key: value\"") == true, "\(String(describing: list))")
        #expect(try await error(loading: "# nothing set yet\n") == nil)
        #expect(try await error(loading: "") == nil)
    }

    @Test func aBadVariableOrFlagIsNamedAsSuch() async throws {
        let file = try ConfigFile("skip-step: 30\n")
        await #expect(throws: ConfigurationError(
            "the environment variable LECTERN_SKIP_STEP: \"fast\" is not allowed; skip-step is a whole number of seconds from 1 to 600")) {
            _ = try await load(file, environment: ["LECTERN_SKIP_STEP": "fast"])
        }
        await #expect(throws: ConfigurationError("--skip-step: 0 is not allowed; skip-step is a whole number of seconds from 1 to 600",
                                                 isFlag: true)) {
            _ = try await load(file, flags: [.skipStep: .number(0)])
        }
    }

    @Test func theLoudnessTargetComesFromAFlagOrTheEnvironmentToo() async throws {
        let file = try ConfigFile("loudness-target: -23\n")
        #expect(try await load(file, environment: ["LECTERN_LOUDNESS_TARGET": "-20"]).options.loudnessTarget == -20)
        let flagged = try await load(file, flags: [.loudnessTarget: .number(-16)], environment: ["LECTERN_LOUDNESS_TARGET": "-20"])
        #expect(flagged.options.loudnessTarget == -16 && flagged.entries[.loudnessTarget] == .init(value: "-16", source: .flag))
        await #expect(throws: ConfigurationError(
            "the environment variable LECTERN_LOUDNESS_TARGET: -9 is not allowed; loudness-target is \(Setting.loudnessTarget.allowed)")) {
            _ = try await load(file, environment: ["LECTERN_LOUDNESS_TARGET": "-9"])
        }
    }

    @Test func aReloadReadsTheFileAgainAndKeepsTheFlagsAndTheEnvironment() async throws {
        let file = try ConfigFile("skip-step: 30\naudio-sink: pulsesink\n")
        var settings = try await load(file, flags: [.logLevel: .text("debug")], environment: ["LECTERN_SLEEP_FADE": "5"])
        settings.options.busAddress = "unix:path=/run/bus"
        try file.write("skip-step: 20\naudio-sink: alsasink\nlog-level: error\nsleep-fade: 9\ntitle-template: \"{book}\"\n")
        let newer = try await settings.reloaded()
        #expect(newer.options.skipStep == .seconds(20))
        #expect(newer.logLevel == .debug && newer.options.listening.sleepFade == .seconds(5))
        #expect(settings.changes(to: newer) == [.audioSink, .skipStep, .titleTemplate])
        // The output waits for the next start; what is not a setting stays.
        let inEffect = settings.applyingAtOnce(newer)
        #expect(inEffect.options.audioSink == "pulsesink" && inEffect.entries[.audioSink]?.value == "pulsesink")
        #expect(inEffect.options.skipStep == .seconds(20) && inEffect.options.titleTemplate == TitleTemplate("{book}"))
        #expect(inEffect.options.busAddress == "unix:path=/run/bus")
    }
}
