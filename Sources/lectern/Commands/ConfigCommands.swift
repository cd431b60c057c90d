import ArgumentParser
import Foundation
import LecternClient

/// `lectern config`: the daemon's settings in effect and where each comes from; `lectern config reload`.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "config",
        abstract: "Show lecternd's settings in effect and where each comes from, or reload its configuration file.",
        discussion: examples("lectern config", "lectern config --json", "lectern config reload")
            + "\n\nThe file is $XDG_CONFIG_HOME/lectern/config.yaml (YAML, one `key: value` per line, e.g. `skip-step: 30`); "
            + "each key is also a flag of lecternd (--skip-step) and an environment variable (LECTERN_SKIP_STEP). "
            + "A flag wins over the environment, which wins over the file.",
        subcommands: [Show.self, Reload.self], defaultSubcommand: Show.self)

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every setting's value in effect and its source (flag, environment variable, file, default).",
            discussion: examples("lectern config show", "lectern config show --json"))
        @OptionGroup var bus: BusOptions
        @Flag(help: "One JSON object: each key's value and source.") var json = false

        func run() async throws {
            let values = try await bus.connect().settingValues()
            if json {
                var object: [String: [String: String]] = [:]
                for setting in values { object[setting.key] = ["value": setting.value, "source": setting.source] }
                print(JSON.encode(object))
            } else if !values.isEmpty {
                print(Format.settings(values))
            }
        }
    }

    struct Reload: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Read the configuration file again and apply it, playback going on (as SIGHUP does).",
            discussion: examples("lectern config reload"))
        @OptionGroup var bus: BusOptions

        func run() async throws {
            let reloaded = try await bus.connect().reload()
            if reloaded.applied.isEmpty && reloaded.atNextStart.isEmpty { print("nothing changed") }
            if !reloaded.applied.isEmpty { print("applied: " + reloaded.applied.joined(separator: ", ")) }
            if !reloaded.atNextStart.isEmpty { print("when lecternd next starts: " + reloaded.atNextStart.joined(separator: ", ")) }
        }
    }
}
