import Foundation
import LecternCore
import Logging

/// One setting of the daemon: its key in the configuration file, which is also its flag (`--skip-step`) and,
/// in capitals with the prefix `LECTERN_`, its environment variable (`LECTERN_SKIP_STEP`).
public enum Setting: String, CaseIterable, Sendable, Comparable {
    case libraryFolders = "library-folders"
    case audioSink = "audio-sink"
    case database
    case cacheDirectory = "cache-directory"
    case outputPolicy = "output-policy"
    case resumeWindow = "resume-window"
    case interruptions
    case unplugBookmark = "unplug-bookmark"
    case seriesContinue = "series-continue"
    case skipStep = "skip-step"
    case smartRewind = "smart-rewind"
    case rewindAfter = "rewind-after"
    case sleepFade = "sleep-fade"
    case titleTemplate = "title-template"
    case prompts
    case promptLanguage = "prompt-language"
    case promptVoice = "prompt-voice"
    case logLevel = "log-level"
    case loudnessTarget = "loudness-target"
    case network
    case networkInterface = "network-interface"

    /// lecternd's flag: `--library-folder` is given once per folder.
    public var flag: String { self == .libraryFolders ? "--library-folder" : "--" + rawValue }
    public var environmentVariable: String { "LECTERN_" + rawValue.uppercased().replacingOccurrences(of: "-", with: "_") }

    /// The values it takes, as an error message and `--help` say them.
    public var allowed: String {
        switch self {
        case .libraryFolders: return "a list of folders, each absolute or starting with ~/, e.g. [~/Audiobooks, /srv/books]"
        case .audioSink: return "a GStreamer pipeline description for the output, e.g. \"pulsesink\" or \"fakesink sync=true\""
        case .database, .cacheDirectory: return "a path, absolute or starting with ~/"
        case .outputPolicy: return OutputPolicyMode.allCases.map(\.rawValue).joined(separator: ", ")
        case .resumeWindow: return "a whole number of seconds from 0 to \(DaemonOptions.longestResumeWindow) (a day)"
        case .interruptions: return InterruptionMode.allCases.map(\.rawValue).joined(separator: ", ")
        case .unplugBookmark, .seriesContinue, .network: return "true or false"
        case .networkInterface: return "a network interface's name (e.g. eth0, wlan0, enp3s0), or \"\" for every interface"
        case .skipStep: return "a whole number of seconds from 1 to 600"
        case .smartRewind: return "off, or MIN-MAX in whole seconds with MIN <= MAX <= 600, e.g. 3-30"
        case .rewindAfter: return "a whole number of seconds from 0 to 3600"
        case .sleepFade: return "a whole number of seconds from 0 to 600"
        case .titleTemplate: return "text with any of {chapter}, {book}, {author}, {file}, {n}, {count}, e.g. \"{chapter} · {book}\""
        case .prompts: return "true or false"
        case .promptLanguage: return "an espeak-ng voice name: letters, digits and dashes, e.g. en, en-us, de, fr"
        case .promptVoice: return "an espeak-ng variant (letters and digits, e.g. f3, m2, klatt), or \"\" for the language's own"
        case .logLevel: return Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
        case .loudnessTarget:
            return "a whole number of LUFS from \(Settings.loudnessTargets.lowerBound) to \(Settings.loudnessTargets.upperBound), "
                + "the loudness normalised books play at, e.g. -18 (spoken word), -23 (EBU R128), -16 (louder)"
        }
    }

    /// Whether a reload (SIGHUP, `lectern config reload`) applies a new value at once; the others apply when
    /// lecternd next starts (a new output, library or cache needs a new pipeline or a reopened database).
    public var appliesAtOnce: Bool {
        switch self {
        case .audioSink, .database, .cacheDirectory, .network, .networkInterface: return false
        default: return true
        }
    }

    public static func < (a: Setting, b: Setting) -> Bool { a.rawValue < b.rawValue }
}

/// Where a setting's value came from, in precedence order: a flag, then the environment, then the file, then
/// the default.
public enum SettingSource: Sendable, Equatable {
    case flag
    case environment
    case file(String)
    case defaultValue

    /// As `lectern config` shows it, e.g. "--skip-step", "LECTERN_SKIP_STEP", "/home/u/.config/lectern/config.yaml".
    public func name(of setting: Setting) -> String {
        switch self {
        case .flag: return setting.flag
        case .environment: return setting.environmentVariable
        case .file(let path): return path
        case .defaultValue: return "default"
        }
    }
}

/// A configuration that cannot be used: which file (or variable, or flag), which key, and what it allows.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    public let description: String
    /// Set when a flag is what is wrong: a usage error rather than a bad configuration.
    public let isFlag: Bool

    public init(_ description: String, isFlag: Bool = false) {
        self.description = description
        self.isFlag = isFlag
    }

    static func invalid(_ setting: Setting, _ value: String, from source: SettingSource) -> ConfigurationError {
        let place: String
        switch source {
        case .flag: place = setting.flag
        case .environment: place = "the environment variable \(setting.environmentVariable)"
        case .file(let path): place = "\(path): \(setting.rawValue)"
        case .defaultValue: place = setting.rawValue
        }
        return ConfigurationError("\(place): \(value) is not allowed; \(setting.rawValue) is \(setting.allowed)",
                                  isFlag: source == .flag)
    }
}
