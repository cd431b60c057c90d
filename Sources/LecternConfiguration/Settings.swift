import Configuration
import Foundation
import LecternCore
import Logging
import Synchronization
import SystemPackage
import Yams

/// The daemon's settings in effect: each one from its flag, else its environment variable, else the configuration
/// file (`$XDG_CONFIG_HOME/lectern/config.yaml`), else its default; read through swift-configuration, with where
/// each value came from. A value out of range, a key the file should not have, a file that is not YAML: an error
/// naming the file (or variable, or flag), the key and what it allows; never a half-read configuration.
public struct Settings: Sendable {
    /// What a flag of `lecternd` gave.
    public enum FlagValue: Sendable {
        case text(String)
        case texts([String])
        case number(Int)
        case on(Bool)
    }

    /// Each setting's value, as `lectern config` shows it, and its source.
    public struct Entry: Sendable, Equatable {
        public let value: String
        public let source: SettingSource
    }

    /// The configuration file read (it may not exist: then every value comes from elsewhere).
    public let file: String
    /// The daemon's options; the bus and the media reader are not settings (the caller sets them).
    public var options: DaemonOptions
    public private(set) var logLevel: Logger.Level = .info
    /// The folders books are imported from (`lectern import` without a folder).
    public private(set) var libraryFolders: [String] = []
    public private(set) var entries: [Setting: Entry] = [:]
    private let flags: [Setting: FlagValue]
    private let environment: [String: String]

    /// The loudness targets `loudness-target` allows, LUFS.
    public static let loudnessTargets = -30...(-10)

    /// `$XDG_CONFIG_HOME/lectern/config.yaml`.
    public static var defaultFile: String { XDG.configHome.appendingPathComponent("lectern/config.yaml").path }

    public static func load(file: String? = nil, flags: [Setting: FlagValue] = [:],
                            environment: [String: String] = ProcessInfo.processInfo.environment) async throws(ConfigurationError) -> Settings {
        var settings = Settings(file: file ?? defaultFile, options: DaemonOptions(), flags: flags, environment: environment)
        let reading = try await Reading(file: settings.file, flags: flags, environment: environment)
        try settings.read(reading)
        return settings
    }

    /// The same sources read again: the file as it is now; the flags and the environment as they were.
    public func reloaded() async throws(ConfigurationError) -> Settings {
        try await Self.load(file: file, flags: flags, environment: environment)
    }

    /// `newer`'s values for the settings a reload applies at once; this one's for the others (and for what is not a
    /// setting: the bus, the media reader).
    public func applyingAtOnce(_ newer: Settings) -> Settings {
        var result = newer
        result.options.audioSink = options.audioSink
        result.options.databasePath = options.databasePath
        result.options.cacheDirectory = options.cacheDirectory
        result.options.busAddress = options.busAddress
        result.options.mediaReader = options.mediaReader
        for setting in Setting.allCases where !setting.appliesAtOnce { result.entries[setting] = entries[setting] }
        return result
    }

    /// The settings whose value differs in `other`.
    public func changes(to other: Settings) -> [Setting] {
        Setting.allCases.filter { entries[$0]?.value != other.entries[$0]?.value }
    }

    /// One line per setting, `key  value  source`, aligned: what `lecternd --print-config` prints.
    public var table: String {
        let rows = Setting.allCases.map { setting in
            (setting.rawValue, entries[setting]?.value ?? "", entries[setting]?.source.name(of: setting) ?? "")
        }
        let keyWidth = rows.map(\.0.count).max() ?? 0
        let valueWidth = min(rows.map(\.1.count).max() ?? 0, 40)
        return rows.map { key, value, source in
            key.padding(toLength: keyWidth, withPad: " ", startingAt: 0) + "  "
                + (value.count < valueWidth ? value.padding(toLength: valueWidth, withPad: " ", startingAt: 0) : value)
                + "  " + source
        }.joined(separator: "\n")
    }

    // MARK: - Reading each setting

    private mutating func read(_ reading: Reading) throws(ConfigurationError) {
        let folders = try reading.value(.libraryFolders) { $0.stringArray(forKey: $1) }
        libraryFolders = try (folders?.value ?? []).map { folder throws(ConfigurationError) in
            guard let path = Self.expand(folder) else {
                throw .invalid(.libraryFolders, "\"\(folder)\"", from: folders?.source ?? .defaultValue)
            }
            return path
        }
        note(.libraryFolders, "[" + libraryFolders.joined(separator: ", ") + "]", folders?.source)

        // Each default is the one DaemonOptions and ListeningOptions have: one place says it.
        let defaults = DaemonOptions()
        let sink = try reading.value(.audioSink) { $0.string(forKey: $1) }
        options.audioSink = sink?.value
        note(.audioSink, sink?.value ?? "autoaudiosink", sink?.source)
        options.databasePath = try path(.database, reading, default: defaults.databasePath)
        options.cacheDirectory = URL(fileURLWithPath: try path(.cacheDirectory, reading, default: defaults.cacheDirectory.path))

        options.outputPolicy = try choice(.outputPolicy, reading, default: defaults.outputPolicy)
        options.resumeWindow = .seconds(try seconds(.resumeWindow, reading, in: 0...Int(DaemonOptions.longestResumeWindow),
                                                    default: defaults.resumeWindow))
        options.interruptions = try choice(.interruptions, reading, default: defaults.interruptions)
        let bookmark = try reading.value(.unplugBookmark) { $0.bool(forKey: $1) }
        options.unplugBookmark = bookmark?.value ?? defaults.unplugBookmark
        note(.unplugBookmark, String(options.unplugBookmark), bookmark?.source)
        let continues = try reading.value(.seriesContinue) { $0.bool(forKey: $1) }
        options.seriesContinue = continues?.value ?? defaults.seriesContinue
        note(.seriesContinue, String(options.seriesContinue), continues?.source)
        let network = try reading.value(.network) { $0.bool(forKey: $1) }
        options.network = network?.value ?? defaults.network
        note(.network, String(options.network), network?.source)
        options.networkInterface = try word(.networkInterface, reading, allowing: "-._@:", default: defaults.networkInterface)

        options.skipStep = .seconds(try seconds(.skipStep, reading, in: 1...600, default: defaults.skipStep))
        let standard = defaults.listening.smartRewind
        let rewindAfter = try seconds(.rewindAfter, reading, in: 0...3600, default: standard.threshold)
        let rewind = try reading.value(.smartRewind) { $0.string(forKey: $1) }
        let rewindText = rewind?.value ?? "\(standard.minimum.components.seconds)-\(standard.maximum.components.seconds)"
        guard let smartRewind = Self.smartRewind(rewindText, after: rewindAfter) else {
            throw .invalid(.smartRewind, "\"\(rewindText)\"", from: rewind?.source ?? .defaultValue)
        }
        note(.smartRewind, rewindText, rewind?.source)
        options.listening = ListeningOptions(smartRewind: smartRewind,
                                             sleepFade: .seconds(try seconds(.sleepFade, reading, in: 0...600,
                                                                             default: defaults.listening.sleepFade)))
        let template = try reading.value(.titleTemplate) { $0.string(forKey: $1) }
        options.titleTemplate = template.map { TitleTemplate($0.value) } ?? defaults.titleTemplate
        note(.titleTemplate, options.titleTemplate.pattern, template?.source)
        let prompts = try reading.value(.prompts) { $0.bool(forKey: $1) }
        options.prompts = prompts?.value ?? defaults.prompts
        note(.prompts, String(options.prompts), prompts?.source)
        options.promptVoice.language = try word(.promptLanguage, reading, allowing: "-", default: defaults.promptVoice.language)
        let variant = try word(.promptVoice, reading, allowing: "", default: defaults.promptVoice.variant ?? "")
        options.promptVoice.variant = variant.isEmpty ? nil : variant
        logLevel = try choice(.logLevel, reading, default: .info)
        options.loudnessTarget = Double(try number(.loudnessTarget, reading, in: Self.loudnessTargets,
                                                   default: Int(defaults.loudnessTarget)))
    }

    /// Whether `text` can be (part of) an espeak-ng voice name: at most 40 ASCII letters, digits and `extra`.
    public static func isVoiceName(_ text: String, allowing extra: String) -> Bool {
        text.count <= 40 && text.unicodeScalars.allSatisfy {
            $0.isASCII && (CharacterSet.alphanumerics.contains($0) || extra.unicodeScalars.contains($0))
        }
    }

    /// A name made of ASCII letters, digits and `extra` (empty only where the default is).
    private mutating func word(_ setting: Setting, _ reading: Reading, allowing extra: String,
                               default value: String) throws(ConfigurationError) -> String {
        guard let found = try reading.value(setting, { $0.string(forKey: $1) }) else {
            note(setting, value, nil)
            return value
        }
        guard Self.isVoiceName(found.value, allowing: extra), !found.value.isEmpty || value.isEmpty else {
            throw .invalid(setting, "\"\(found.value)\"", from: found.source)
        }
        note(setting, found.value, found.source)
        return found.value
    }

    private mutating func note(_ setting: Setting, _ value: String, _ source: SettingSource?) {
        entries[setting] = Entry(value: value, source: source ?? .defaultValue)
    }

    private mutating func seconds(_ setting: Setting, _ reading: Reading, in range: ClosedRange<Int>,
                                  default value: Duration) throws(ConfigurationError) -> Int {
        try number(setting, reading, in: range, default: Int(value.components.seconds))
    }

    private mutating func number(_ setting: Setting, _ reading: Reading, in range: ClosedRange<Int>,
                                 default value: Int) throws(ConfigurationError) -> Int {
        guard let found = try reading.value(setting, { $0.int(forKey: $1) }) else {
            note(setting, String(value), nil)
            return value
        }
        guard range.contains(found.value) else { throw .invalid(setting, String(found.value), from: found.source) }
        note(setting, String(found.value), found.source)
        return found.value
    }

    private mutating func choice<Value: RawRepresentable<String>>(_ setting: Setting, _ reading: Reading,
                                                                  default value: Value) throws(ConfigurationError) -> Value {
        guard let found = try reading.value(setting, { $0.string(forKey: $1) }) else {
            note(setting, value.rawValue, nil)
            return value
        }
        guard let chosen = Value(rawValue: found.value) else { throw .invalid(setting, "\"\(found.value)\"", from: found.source) }
        note(setting, chosen.rawValue, found.source)
        return chosen
    }

    private mutating func path(_ setting: Setting, _ reading: Reading, default value: String) throws(ConfigurationError) -> String {
        guard let found = try reading.value(setting, { $0.string(forKey: $1) }) else {
            note(setting, value, nil)
            return value
        }
        guard let path = Self.expand(found.value) else { throw .invalid(setting, "\"\(found.value)\"", from: found.source) }
        note(setting, path, found.source)
        return path
    }

    /// An absolute path, or one starting with ~/ (the home folder); nil for anything else.
    static func expand(_ path: String) -> String? {
        if path.hasPrefix("/") { return path }
        guard path == "~" || path.hasPrefix("~/") else { return nil }
        let home = ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()
        return home + path.dropFirst()
    }

    /// "off", or "MIN-MAX" seconds: MIN after a pause of `after` seconds, growing to MAX after an hour.
    static func smartRewind(_ text: String, after: Int) -> SmartRewind? {
        if text == "off" { return .off }
        let bounds = text.split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
        guard bounds.count == 2, let low = bounds[0], let high = bounds[1], 0 <= low, low <= high, high <= 600 else { return nil }
        return SmartRewind(threshold: .seconds(after), minimum: .seconds(low), maximum: .seconds(high),
                           fullAfter: .seconds(max(3600, after)))
    }
}

/// The sources of one reading, in precedence order, and which of them answered for each key.
private struct Reading {
    let reader: ConfigReader
    let reporter = SourceReporter()
    let sources: [SettingSource]
    /// What each source gave for a key, as text, for an error's message.
    let given: @Sendable (Setting, SettingSource) -> String

    init(file: String, flags: [Setting: Settings.FlagValue], environment: [String: String]) async throws(ConfigurationError) {
        let fileValues = try Self.checkFile(file)
        var flagValues: [AbsoluteConfigKey: ConfigValue] = [:]
        for (setting, value) in flags {
            let content: ConfigContent
            switch value {
            case .text(let text): content = .string(text)
            case .texts(let texts): content = .stringArray(texts)
            case .number(let number): content = .int(number)
            case .on(let on): content = .bool(on)
            }
            flagValues[AbsoluteConfigKey([setting.rawValue])] = ConfigValue(content, isSecret: false)
        }
        var providers: [any ConfigProvider] = [
            InMemoryProvider(name: "flags", values: flagValues),
            EnvironmentVariablesProvider(environmentVariables: environment, arraySeparator: ":").prefixKeys(with: "lectern"),
        ]
        sources = [.flag, .environment, .file(file)]
        if !fileValues.isEmpty {
            do {
                providers.append(try await FileProvider<YAMLSnapshot>(filePath: FilePath(file), allowMissing: true))
            } catch {
                throw ConfigurationError("\(file): cannot be read: \(error)")
            }
        }
        reader = ConfigReader(providers: providers, accessReporter: reporter)
        given = { setting, source in
            switch source {
            case .flag:
                switch flags[setting] {
                case .text(let text): return "\"\(text)\""
                case .texts(let texts): return "\"\(texts.joined(separator: ", "))\""
                case .number(let number): return String(number)
                case .on(let on): return String(on)
                case nil: return ""
                }
            case .environment: return "\"\(environment[setting.environmentVariable] ?? "")\""
            case .file: return fileValues[setting] ?? ""
            case .defaultValue: return ""
            }
        }
    }

    /// The value the first source that has one gives, or nil when none has; an error when that source's value is not
    /// of the setting's type.
    func value<Value>(_ setting: Setting, _ get: (ConfigReader, ConfigKey) -> Value?) throws(ConfigurationError) -> (value: Value, source: SettingSource)? {
        let value = get(reader, ConfigKey(setting.rawValue))
        for (index, result) in reporter.results(for: setting.rawValue).enumerated() where index < sources.count {
            let source = sources[index]
            switch result {
            case .failure:
                throw .invalid(setting, given(setting, source), from: source)
            case .success(let lookup) where lookup.value != nil:
                guard let value else { throw .invalid(setting, given(setting, source), from: source) }
                return (value, source)
            case .success:
                continue
            }
        }
        return nil
    }

    /// The file's keys, each a setting, and the text of their values (none when there is no file, or only comments);
    /// an error naming the file when it is not YAML, not a mapping of keys to values, or has a key that is not a
    /// setting.
    static func checkFile(_ file: String) throws(ConfigurationError) -> [Setting: String] {
        guard FileManager.default.fileExists(atPath: file) else { return [:] }
        let node: Node?
        do {
            node = try Yams.compose(yaml: try String(contentsOfFile: file, encoding: .utf8))
        } catch let error as YamlError {
            throw ConfigurationError("\(file): not valid YAML: \(error)")
        } catch {
            throw ConfigurationError("\(file): cannot be read: \(error.localizedDescription)")
        }
        guard let node else { return [:] }  // empty, or comments only
        guard let mapping = node.mapping else {
            throw ConfigurationError("\(file): expected one setting per line, as \"key: value\" (e.g. \"skip-step: 30\")")
        }
        var values: [Setting: String] = [:]
        for (key, value) in mapping {
            guard let name = key.string, let setting = Setting(rawValue: name) else {
                let settings = Setting.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigurationError("\(file): \(key.string ?? "\(key)") is not a setting; the settings are \(settings)")
            }
            // (swift-configuration reads a nested mapping as other keys: never this one's value.)
            guard value.mapping == nil else { throw .invalid(setting, "a mapping", from: .file(file)) }
            values[setting] = value.scalar.map { "\"\($0.string)\"" } ?? "a list"
        }
        return values
    }
}

/// Records, for each key read, what each source answered.
private final class SourceReporter: AccessReporter {
    private let results = Mutex<[String: [Result<LookupResult, any Error>]]>([:])

    func report(_ event: AccessEvent) {
        let key = event.metadata.key.components.joined(separator: ".")
        results.withLock { $0[key] = event.providerResults.map(\.result) }
    }

    func results(for key: String) -> [Result<LookupResult, any Error>] {
        results.withLock { $0[key] ?? [] }
    }
}
