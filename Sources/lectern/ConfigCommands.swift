import ArgumentParser
import DBus
import Foundation

/// `lectern config`: the daemon's settings in effect and where each comes from; `lectern config reload`.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "config",
        abstract: "Show lecternd's settings in effect and where each comes from, or reload its configuration file.",
        discussion: examples("lectern config", "lectern config --json", "lectern config reload")
            + "\n\nThe file is $XDG_CONFIG_HOME/lectern/config.yaml (YAML, one `key: value` per line, e.g. `skip-step: 30`); "
            + "each key is also a flag of lecternd (--skip-step) and an environment variable (LECTERN_SKIP_STEP). "
            + "A flag wins over the environment, which wins over the file.",
        subcommands: [Show.self, Reload.self], defaultSubcommand: Show.self)

    static let interface = "org.lectern.Configuration1"

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every setting's value in effect and its source (flag, environment variable, file, default).",
            discussion: examples("lectern config show", "lectern config show --json"))
        @OptionGroup var bus: BusOptions
        @Flag(help: "One JSON object: each key's value and source.") var json = false

        func run() async throws {
            let daemon = try await Daemon.connect(bus)
            let values = try await daemon.library("Values", interface: ConfigCommand.interface).first?.elements ?? []
            let rows: [(key: String, value: String, source: String)] = values.compactMap { entry in
                guard let fields = entry.fields, fields.count == 3, let key = fields[0].string,
                      let value = fields[1].string, let source = fields[2].string else { return nil }
                return (key, value, source)
            }
            if json {
                var object: [String: [String: String]] = [:]
                for row in rows { object[row.key] = ["value": row.value, "source": row.source] }
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
                print(String(decoding: data, as: UTF8.self))
                return
            }
            let keyWidth = rows.map(\.key.count).max() ?? 0
            let valueWidth = min(rows.map(\.value.count).max() ?? 0, 40)
            for row in rows {
                print(row.key.padding(toLength: keyWidth, withPad: " ", startingAt: 0) + "  "
                      + (row.value.count < valueWidth ? row.value.padding(toLength: valueWidth, withPad: " ", startingAt: 0) : row.value)
                      + "  " + row.source)
            }
        }
    }

    struct Reload: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Read the configuration file again and apply it, playback going on (as SIGHUP does).",
            discussion: examples("lectern config reload"))
        @OptionGroup var bus: BusOptions

        func run() async throws {
            let reply = try await Daemon.connect(bus).library("Reload", interface: ConfigCommand.interface)
            let applied = reply.first?.stringArray ?? []
            let atNextStart = reply.dropFirst().first?.stringArray ?? []
            if applied.isEmpty && atNextStart.isEmpty { print("nothing changed") }
            if !applied.isEmpty { print("applied: " + applied.joined(separator: ", ")) }
            if !atNextStart.isEmpty { print("when lecternd next starts: " + atNextStart.joined(separator: ", ")) }
        }
    }
}
