import DBus
import Foundation
import Testing
import TestSupport

/// org.lectern.Configuration1 on /org/lectern/Lectern1.
enum Config {
    static let interface = "org.lectern.Configuration1"
    static let invalid = "org.lectern.Configuration1.Error.Invalid"
}

extension DaemonFixture {
    /// The daemon's settings in effect, as Values gives them: key → (value, source).
    func configValues() async throws -> [String: (value: String, source: String)] {
        var values: [String: (value: String, source: String)] = [:]
        for entry in try await lib("Values", interface: Config.interface).first?.elements ?? [] {
            guard let fields = entry.fields, fields.count == 3, let key = fields[0].string else { continue }
            values[key] = (fields[1].string ?? "", fields[2].string ?? "")
        }
        return values
    }

    func configProperty(_ name: String) async throws -> String? {
        try await client.call(Lib.busName, path: Lib.path, interface: MPRIS.properties, member: "Get",
                              [.string(Config.interface), .string(name)], timeout: .seconds(10)).first?.unwrapped.string
    }
}

extension Integration.Desktop {
    /// The configuration file as a user edits it: read at start under flags and environment, shown by
    /// `lecternd --print-config` and `lectern config`, reloaded on SIGHUP and by `lectern config reload` while a book
    /// plays; a bad file starts nothing, and a bad reload keeps what was in effect.
    @Suite struct Configuration {
        /// A configuration file in a folder of its own.
        final class ConfigFile {
            let folder: TemporaryDirectory
            var path: String { folder.appending("config.yaml").path }
            init(_ text: String) throws {
                folder = try TemporaryDirectory(prefix: "lectern-config")
                try write(text)
            }
            func write(_ text: String) throws { try text.write(toFile: path, atomically: true, encoding: .utf8) }
            deinit { folder.remove() }
        }

        /// An environment of its own: a home and XDG folders in `folder`, nothing from the test's.
        static func environment(in folder: TemporaryDirectory, _ extra: [String: String] = [:]) -> [String: String] {
            ["HOME": folder.path, "XDG_CONFIG_HOME": folder.appending("config").path, "XDG_DATA_HOME": folder.appending("data").path,
             "XDG_CACHE_HOME": folder.appending("cache").path, "PATH": "/usr/bin:/bin"].merging(extra) { $1 }
        }

        @Test func printConfigShowsEachValueInEffectAndWhereItCameFrom() async throws {
            let file = try ConfigFile("skip-step: 30\nsleep-fade: 4\noutput-policy: off\nlibrary-folders: [~/Books]\n")
            let environment = Self.environment(in: file.folder, ["LECTERN_SKIP_STEP": "40", "LECTERN_OUTPUT_POLICY": "pause-only",
                                                                 "LECTERN_INTERRUPTIONS": "ignore"])
            let printed = try await Subprocess.run(builtExecutable("lecternd").path,
                                                   ["--print-config", "--config", file.path, "--skip-step", "45"], env: environment)
            #expect(printed.status == 0, "\(printed)")
            let rows = printed.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            #expect(rows.count == 21, "\(printed.stdout)")
            #expect(rows.contains(["skip-step", "45", "--skip-step"]), "\(printed.stdout)")
            #expect(rows.contains(["output-policy", "pause-only", "LECTERN_OUTPUT_POLICY"]))
            #expect(rows.contains(["interruptions", "ignore", "LECTERN_INTERRUPTIONS"]))
            #expect(rows.contains(["sleep-fade", "4", file.path]))
            #expect(rows.contains(["library-folders", "[\(file.folder.path)/Books]", file.path]))
            #expect(rows.contains(["resume-window", "1800", "default"]))
            #expect(rows.contains(["database", file.folder.appending("data").path + "/lectern/library.sqlite", "default"]))
        }

        @Test func aBadFileStartsNothingAndSaysWhereAndWhy() async throws {
            let file = try ConfigFile("skip-step: 30\nsmart-rewind: 30-3\n")
            let bus = try PrivateBus()
            defer { bus.stop() }
            let started = try await Subprocess.run(builtExecutable("lecternd").path,
                                                   ["--config", file.path, "--audio-sink", "fakesink sync=true"],
                                                   env: Self.environment(in: file.folder, bus.environment.filter { variable, _ in
                                                       ["DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS", "XDG_RUNTIME_DIR"].contains(variable)
                                                   }), timeout: .seconds(30))
            #expect(started.status == 78)
            #expect(started.stderr == "lecternd: \(file.path): smart-rewind: \"30-3\" is not allowed; smart-rewind is off, or "
                    + "MIN-MAX in whole seconds with MIN <= MAX <= 600, e.g. 3-30\n", "\(started)")
            // Nothing started: no name was owned, no library was made.
            let connection = try BusConnection(address: bus.address)
            defer { connection.close() }
            for name in [Lib.busName, MPRIS.busName] {
                let owned = try await connection.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                                      member: "NameHasOwner", [.string(name)]).first?.bool
                #expect(owned == false, "\(name)")
            }
            #expect(!FileManager.default.fileExists(atPath: file.folder.appending("data/lectern").path))
            // A flag is a usage error, said as such.
            let flag = try await Subprocess.run(builtExecutable("lecternd").path, ["--print-config", "--config", file.path + ".none",
                                                                                   "--resume-window", "90000"],
                                                env: Self.environment(in: file.folder))
            #expect(flag.status == 64 && flag.stderr.contains("--resume-window: 90000 is not allowed; resume-window is a whole number of seconds from 0 to 86400"),
                    "\(flag)")
        }

        @Test func theFileSetsWhatNoFlagSetsAndLecternConfigSaysWhereEachCameFrom() async throws {
            let file = try ConfigFile("skip-step: 30\noutput-policy: pause-only\nresume-window: 600\ninterruptions: ignore\n")
            try await DaemonFixture.with(daemonArguments: ["--config", file.path, "--resume-window", "60"]) { d in
                #expect(try await d.listenProperty("SkipStep").int64 == 30_000_000)
                #expect(try await d.lib("Get", [.string("org.lectern.Output1"), .string("Policy")], interface: MPRIS.properties)
                    .first?.unwrapped.string == "pause-only")
                #expect(try await d.lib("Get", [.string("org.lectern.Output1"), .string("ResumeWindow")], interface: MPRIS.properties)
                    .first?.int64 == 60)
                #expect(try await d.lib("Get", [.string("org.lectern.Output1"), .string("Interruptions")], interface: MPRIS.properties)
                    .first?.unwrapped.string == "ignore")
                #expect(try await d.configProperty("File") == file.path)

                let shown = try await d.lectern("config", "--json")
                #expect(shown.status == 0, "\(shown)")
                let json = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: [String: String]] ?? [:]
                #expect(json["skip-step"] == ["value": "30", "source": file.path], "\(shown.stdout)")
                #expect(json["resume-window"] == ["value": "60", "source": "--resume-window"])
                #expect(json["audio-sink"] == ["value": "fakesink sync=true", "source": "--audio-sink"])
                #expect(json["log-level"] == ["value": "info", "source": "default"])
                #expect(json["loudness-target"] == ["value": "-18", "source": "default"])
                #expect(json["interruptions"] == ["value": "ignore", "source": file.path])
                #expect(json["network"] == ["value": "false", "source": "default"])
                #expect(json.count == 21, "\(json.keys.sorted())")
                let table = try await d.lectern("config")
                #expect(table.stdout.split(separator: "\n").contains { $0.split(separator: " ") == ["skip-step", "30", Substring(file.path)] },
                        "\(table.stdout)")
            }
        }

        @Test func importWithoutAFolderImportsTheLibraryFolders() async throws {
            let media = try await MediaLibrary.shared()
            let file = try ConfigFile("library-folders: ['\(media.mp3Book.path)', '\(media.longBook.path)']\n")
            try await DaemonFixture.with(daemonArguments: ["--config", file.path]) { d in
                let imported = try await d.lectern("import")
                #expect(imported.status == 0 && imported.stdout.hasPrefix("imported 2 books\n"), "\(imported)")
                #expect(imported.stdout.contains("The CLI Book"), "\(imported.stdout)")
                #expect(try await d.lib("Get", [.string(Config.interface), .string("LibraryFolders")], interface: MPRIS.properties)
                    .first?.unwrapped.stringArray == [media.mp3Book.path, media.longBook.path])
                // None set: a usage error that says where to set them.
                try file.write("skip-step: 20\n")
                #expect(try await d.lectern("config", "reload").status == 0)
                let none = try await d.lectern("import")
                #expect(none.status == 64 && none.stderr.contains("set library-folders in the configuration"), "\(none)")
            }
        }

        @Test func aReloadWhilePlayingAppliesTheFileAndPlaybackGoesOn() async throws {
            let file = try ConfigFile("skip-step: 30\n")
            try await DaemonFixture.with(daemonArguments: ["--config", file.path]) { d in
                try await d.openURI(d.media.mp3Book)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                let before = try await d.waitForPosition(atLeast: 500_000)
                let mark = try await d.signals.barrier()
                #expect(try await d.metadata()["xesam:title"]?.string == "Chapter One")

                // The fixture's --audio-sink wins over the file's; the database waits for the next start.
                try file.write("skip-step: 10\ntitle-template: \"{chapter} · {book}\"\naudio-sink: alsasink\nlog-level: debug\n"
                               + "database: /nowhere/library.sqlite\n")
                d.daemon.signal(SIGHUP)
                let reloaded = await d.signals.waitFor(since: mark) { $0.interface == Config.interface && $0.member == "Reloaded" }
                #expect(reloaded?.arguments.first?.stringArray == ["skip-step", "title-template", "log-level"]
                        && reloaded?.arguments.last?.stringArray == ["database"], "\(String(describing: reloaded))")
                #expect(try await d.listenProperty("SkipStep").int64 == 10_000_000)
                #expect(try await d.metadata()["xesam:title"]?.string == "Chapter One · The CLI Book")
                // Values says what is in effect.
                let values = try await d.configValues()
                #expect(values["audio-sink"]?.value == "fakesink sync=true" && values["audio-sink"]?.source == "--audio-sink")
                #expect(values["database"]?.value.hasSuffix("/lectern/library.sqlite") == true && values["database"]?.source == "default")
                #expect(values["skip-step"]?.value == "10")
                #expect(values["log-level"]?.value == "debug" && values["log-level"]?.source == file.path)
                // Playback went on: never paused or stopped, the position moved on from where it was.
                #expect(try await d.status() == "Playing")
                #expect(d.signals.values(of: "PlaybackStatus", since: mark).isEmpty, "\(d.signals.values(of: "PlaybackStatus", since: mark))")
                #expect(try await d.position() > before)
                // The new step is the one skips use.
                let here = try await d.position()
                try await d.listen("SkipForward")
                let there = try await d.position()
                #expect(there >= here + 9_500_000 && there < here + 12_000_000, "from \(here) to \(there)")
            }
        }

        @Test func aBadReloadKeepsTheSettingsInEffectAndSaysWhy() async throws {
            let file = try ConfigFile("skip-step: 30\n")
            try await DaemonFixture.with(daemonArguments: ["--config", file.path]) { d in
                try await d.openURI(d.media.mp3Book)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                let mark = try await d.signals.barrier()
                try file.write("skip-step: 0\n")

                let reload = try await d.lectern("config", "reload")
                #expect(reload.status == 1)
                #expect(reload.stderr.contains("\(file.path): skip-step: 0 is not allowed; skip-step is a whole number of seconds from 1 to 600"),
                        "\(reload)")
                let name = await d.errorName { _ = try await d.lib("Reload", interface: Config.interface) }
                #expect(name == Config.invalid)
                #expect(try await d.configProperty("LastReloadError")?.contains("skip-step: 0 is not allowed") == true)
                #expect(try await d.listenProperty("SkipStep").int64 == 30_000_000)
                #expect(try await d.configValues()["skip-step"]?.value == "30")

                // SIGHUP with a file that is not even YAML: the same, and the daemon plays on.
                try file.write("skip-step: [30\n")
                d.daemon.signal(SIGHUP)
                let refused = await d.signals.waitFor(since: mark) {
                    $0.changedInterface == Config.interface && $0.changed["LastReloadError"]?.string?.contains("not valid YAML") == true
                }
                #expect(refused != nil)
                #expect(d.daemon.isRunning)
                #expect(try await d.status() == "Playing")
                #expect(d.signals.values(of: "PlaybackStatus", since: mark).isEmpty)
                #expect(d.log.contains("configuration not reloaded"))

                // Fixed, reloaded: applied, and the error is gone.
                try file.write("skip-step: 20\n")
                let fixed = try await d.lectern("config", "reload")
                #expect(fixed.status == 0 && fixed.stdout.contains("applied: skip-step"), "\(fixed)")
                #expect(try await d.configProperty("LastReloadError") == "")
                #expect(try await d.listenProperty("SkipStep").int64 == 20_000_000)
                let again = try await d.lectern("config", "reload")
                #expect(again.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "nothing changed", "\(again)")
            }
        }
    }
}
