import ArgumentParser
import Dispatch
import Foundation
import LecternConfiguration
import LecternCore
import LecternDaemon
import LecternMedia
import LecternVersion
import Logging
import Synchronization

@main
struct Lecternd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lecternd",
        abstract: "Lectern's daemon: plays audiobooks and music, controlled over D-Bus (MPRIS and Lectern's own API).",
        version: lecternVersion)

    // Every setting is also a key of the configuration file ($XDG_CONFIG_HOME/lectern/config.yaml) and an environment
    // variable (LECTERN_SKIP_STEP); a flag given wins over both (Settings).
    @Option(name: .customLong("library-folder"), help: ArgumentHelp("A folder books are imported from (repeat for more); library-folders in the configuration.", valueName: "folder"))
    var libraryFolders: [String] = []

    @Option(help: "GStreamer pipeline description for the audio output, e.g. \"fakesink sync=true\" (default: autoaudiosink).")
    var audioSink: String?

    @Option(help: "D-Bus address to connect to instead of the session bus.")
    var busAddress: String?

    @Option(help: "Directory for cached covers (default: $XDG_CACHE_HOME/lectern).")
    var cacheDirectory: String?

    @Option(help: "The library database (default: $XDG_DATA_HOME/lectern/library.sqlite).")
    var database: String?

    @Option(help: "When the output in use goes away: pause-and-resume (resume when it comes back; the default), pause-only, off.")
    var outputPolicy: String?

    @Option(help: "Seconds after losing its output during which a returning output resumes playback (default: 1800).")
    var resumeWindow: Int?

    @Option(help: "When another sound asks for the output (a call): pause (and resume after it; the default), ignore.")
    var interruptions: String?

    @Option(help: "Seconds that `lectern skip forward|back` (SkipForward, SkipBackward) move by (default: 15).")
    var skipStep: Int?

    @Option(help: "Smart rewind on resuming after a pause: off, or MIN-MAX seconds (default: 3-30): MIN after a pause of --rewind-after seconds, growing to MAX after an hour.")
    var smartRewind: String?

    @Option(help: "The shortest pause, in seconds, after which resuming rewinds (default: 30).")
    var rewindAfter: Int?

    @Option(help: "Seconds over which the sleep timer fades the volume out (default: 10).")
    var sleepFade: Int?

    @Option(help: "A track's MPRIS title, from {chapter}, {book}, {author}, {file}, {n}, {count}; e.g. \"{chapter} · {book}\" (default: {chapter}).")
    var titleTemplate: String?

    @Flag(inversion: .prefixedNo, help: "Leave a bookmark (kind \"unplug\") where playback paused because the output went away (default: no).")
    var unplugBookmark: Bool?

    @Flag(inversion: .prefixedNo, help: "When a book of a series is played to its end, play the next one of the series not finished (default: no).")
    var seriesContinue: Bool?

    @Flag(inversion: .prefixedNo, help: "Join the home network (UPnP): find the renderers (network speakers, receivers, TVs) to cast to (default: no).")
    var network: Bool?

    @Option(help: "The network interface the home network is on, e.g. eth0 or wlan0 (default: every interface).")
    var networkInterface: String?

    @Flag(inversion: .prefixedNo, help: "Speak prompts (a new book or chapter, the state after a media key, a bookmark added, the sleep timer's last minute, a failed file) with espeak-ng (default: no).")
    var prompts: Bool?

    @Option(help: "The prompts' language, an espeak-ng voice name: en (the default), en-us, de, fr...")
    var promptLanguage: String?

    @Option(help: "A variant of the prompts' voice (espeak-ng: f3, m2, klatt...); \"\" for the language's own (the default).")
    var promptVoice: String?

    @Option(help: "Log level: trace, debug, info (the default), notice, warning, error, critical.")
    var logLevel: String?

    @Option(help: "The loudness, in LUFS from -30 to -10, books with normalisation on play at (default: -18); e.g. --loudness-target=-20.")
    var loudnessTarget: Int?

    @Option(help: ArgumentHelp("The configuration file (default: $XDG_CONFIG_HOME/lectern/config.yaml).", valueName: "file"))
    var config: String?

    @Flag(help: "Print every setting's value in effect and where it comes from (flag, environment, file, default), then exit.")
    var printConfig = false

    @Option(help: .hidden)  // the program that reads media files in a child process; "none": the daemon reads them
    var mediaReaderProgram: String?

    @Flag(name: .customLong("media-reader"), help: .hidden)  // be that child (MediaReader.serve)
    var isMediaReader = false

    @Option(help: .hidden)  // the most folders watched with inotify (WatchOptions)
    var watchLimit: Int?

    @Option(help: .hidden)  // seconds between looks for library folders and mounts gone
    var rootCheck: Double?

    @Option(help: .hidden)  // seconds between scans of the folders beyond the watch limit
    var fallbackScan: Double?

    @Option(help: .hidden)  // the most seconds an activation waits for an import that may find its book's files
    var importWait: Double?

    /// The flags given, by setting.
    var flags: [Setting: Settings.FlagValue] {
        var flags: [Setting: Settings.FlagValue] = [:]
        let texts: [(Setting, String?)] = [(.audioSink, audioSink), (.database, database), (.cacheDirectory, cacheDirectory),
                                           (.outputPolicy, outputPolicy), (.interruptions, interruptions), (.smartRewind, smartRewind),
                                           (.titleTemplate, titleTemplate), (.promptLanguage, promptLanguage),
                                           (.promptVoice, promptVoice), (.logLevel, logLevel),
                                           (.networkInterface, networkInterface)]
        for case let (setting, text?) in texts { flags[setting] = .text(text) }
        let numbers: [(Setting, Int?)] = [(.resumeWindow, resumeWindow), (.skipStep, skipStep), (.rewindAfter, rewindAfter),
                                          (.sleepFade, sleepFade), (.loudnessTarget, loudnessTarget)]
        for case let (setting, number?) in numbers { flags[setting] = .number(number) }
        if let unplugBookmark { flags[.unplugBookmark] = .on(unplugBookmark) }
        if let seriesContinue { flags[.seriesContinue] = .on(seriesContinue) }
        if let prompts { flags[.prompts] = .on(prompts) }
        if let network { flags[.network] = .on(network) }
        if !libraryFolders.isEmpty { flags[.libraryFolders] = .texts(libraryFolders) }
        return flags
    }

    /// The exit status of a configuration that cannot be used (sysexits.h's EX_CONFIG); systemd does not restart it.
    static let badConfiguration: Int32 = 78

    /// The settings from the flags, the environment and the file, read before anything starts (a bad one starts
    /// nothing).
    func readSettings() -> Result<Settings, ConfigurationError> {
        waitingForIt { [flags, config] () async -> Result<Settings, ConfigurationError> in
            do throws(ConfigurationError) {
                return .success(try await Settings.load(file: config, flags: flags))
            } catch {
                return .failure(error)
            }
        }
    }

    /// Runs the daemon on Swift's global executor while the main thread waits for it. (An async `run`
    /// would park the main thread in `dispatch_main()`, whose `pthread_exit` unwinds that thread at
    /// start-up: libgcc_s loaded and ~0.6 MB of this binary's unwind tables read for nothing.)
    func run() throws {
        if isMediaReader { MediaReader.serve() }
        // One malloc arena for all threads, set before any thread starts: glibc gives each thread that allocates an
        // arena of its own (up to 8 per core), and a daemon whose threads mostly wait keeps each one's slack
        // resident: 1 MB of VmRSS while playing (docs/decisions/memory.md). Nothing here allocates
        // hard enough from two threads at once for the shared lock to show (the per-thread tcache serves most).
        limitMallocArenas(to: 1)
        var settings: Settings
        switch readSettings() {
        case .success(let read): settings = read
        case .failure(let error) where error.isFlag: throw ValidationError(error.description)
        case .failure(let error):
            FileHandle.standardError.write(Data("lecternd: \(error)\n".utf8))
            throw ExitCode(Self.badConfiguration)
        }
        if printConfig {
            print(settings.table)
            return
        }
        settings.options.busAddress = busAddress
        settings.options.mediaReader = mediaReaderProgram == "none" ? nil : mediaReaderProgram ?? MediaReader.ownExecutable
        if let watchLimit { settings.options.watching.watchLimit = max(1, watchLimit) }
        if let rootCheck { settings.options.watching.rootCheck = .milliseconds(Int(max(0.05, rootCheck) * 1000)) }
        if let fallbackScan { settings.options.watching.fallbackScan = .milliseconds(Int(max(0.05, fallbackScan) * 1000)) }
        if let importWait { settings.options.watching.importWait = .milliseconds(Int(max(0, importWait) * 1000)) }
        let level = DaemonLogLevel(settings.logLevel)
        LoggingSystem.bootstrap { label in DaemonLogHandler(label: label, level: level) }
        let logger = Logger(label: "lecternd")
        let configured = settings  // the task below takes it
        let code: Int32 = waitingForIt {
            do {
                try await Daemon.run(configured, logLevel: level, logger: logger)
                return 0
            } catch let error as DaemonError {
                logger.error("\(error)")
                return 2
            } catch {
                logger.error("lecternd cannot run: \(error)")
                return 1
            }
        }
        if code != 0 { throw ExitCode(code) }
    }
}

/// Runs `body` on Swift's global executor while the calling thread (the main thread) waits for its result.
private func waitingForIt<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let result = Mutex<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let value = await body()
        result.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return result.withLock { $0 }!
}

/// glibc's `mallopt(M_ARENA_MAX, count)`, looked up at run time: `malloc.h` is not part of Swift's Glibc module.
private func limitMallocArenas(to count: Int32) {
    typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
    let M_ARENA_MAX: Int32 = -8  // malloc.h
    guard let process = dlopen(nil, RTLD_NOW), let mallopt = dlsym(process, "mallopt") else { return }
    _ = unsafeBitCast(mallopt, to: Mallopt.self)(M_ARENA_MAX, count)
}
