import ArgumentParser
import Dispatch
import Foundation
import LecternCore
import LecternDaemon
import LecternVersion
import Logging
import Synchronization

@main
struct Lecternd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lecternd",
        abstract: "Lectern's daemon: plays audiobooks and music, controlled over D-Bus (MPRIS and Lectern's own API).",
        version: lecternVersion)

    @Option(help: "GStreamer pipeline description for the audio output, e.g. \"fakesink sync=true\".")
    var audioSink: String?

    @Option(help: "D-Bus address to connect to instead of the session bus.")
    var busAddress: String?

    @Option(help: "Directory for cached covers (default: $XDG_CACHE_HOME/lectern).")
    var cacheDirectory: String?

    @Option(help: "The library database (default: $XDG_DATA_HOME/lectern/library.sqlite).")
    var database: String?

    @Option(help: "When the output in use goes away: pause-and-resume (resume when it comes back), pause-only, off.")
    var outputPolicy: String = OutputPolicyMode.pauseAndResume.rawValue

    @Option(help: "Seconds after losing its output during which a returning output resumes playback.")
    var resumeWindow: UInt32 = 30 * 60

    @Option(help: "Seconds that `lectern skip forward|back` (SkipForward, SkipBackward) move by.")
    var skipStep: UInt32 = 15

    @Option(help: "Smart rewind on resuming after a pause: off, or MIN-MAX seconds (e.g. 3-30): MIN after a pause of --rewind-after seconds, growing to MAX after an hour.")
    var smartRewind: String = "3-30"

    @Option(help: "The shortest pause, in seconds, after which resuming rewinds.")
    var rewindAfter: UInt32 = 30

    @Option(help: "Seconds over which the sleep timer fades the volume out.")
    var sleepFade: UInt32 = 10

    @Option(help: "A track's MPRIS title, from {chapter}, {book}, {author}, {file}, {n}, {count}; e.g. \"{chapter} · {book}\".")
    var titleTemplate: String = "{chapter}"

    @Flag(help: "Leave a bookmark (kind \"unplug\") where playback paused because the output went away.")
    var unplugBookmark = false

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(help: .hidden)  // the program that reads media files in a child process; "none": the daemon reads them
    var mediaReaderProgram: String?

    @Flag(name: .customLong("media-reader"), help: .hidden)  // be that child (MediaReader.serve)
    var isMediaReader = false

    func validate() throws {
        guard OutputPolicyMode(rawValue: outputPolicy) != nil else {
            let modes = OutputPolicyMode.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("--output-policy must be one of \(modes)")
        }
        guard rewind != nil else { throw ValidationError("--smart-rewind is off or MIN-MAX in seconds, e.g. 3-30") }
        guard (1...600).contains(skipStep) else { throw ValidationError("--skip-step is between 1 and 600 seconds") }
        guard resumeWindow <= DaemonOptions.longestResumeWindow else {
            throw ValidationError("--resume-window is at most \(DaemonOptions.longestResumeWindow) seconds (a day)")
        }
    }

    /// --smart-rewind and --rewind-after as a SmartRewind; nil when malformed.
    var rewind: SmartRewind? {
        if smartRewind == "off" { return .off }
        let bounds = smartRewind.split(separator: "-").compactMap { UInt32($0) }
        guard bounds.count == 2, bounds[0] <= bounds[1], bounds[1] <= 600 else { return nil }
        return SmartRewind(threshold: .seconds(Int64(rewindAfter)), minimum: .seconds(Int64(bounds[0])),
                           maximum: .seconds(Int64(bounds[1])), fullAfter: .seconds(max(3600, Int64(rewindAfter))))
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
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "lecternd")
        let options = DaemonOptions(audioSink: audioSink, busAddress: busAddress,
                                    cacheDirectory: cacheDirectory.map { URL(fileURLWithPath: $0) },
                                    databasePath: database,
                                    outputPolicy: OutputPolicyMode(rawValue: outputPolicy) ?? .pauseAndResume,
                                    resumeWindow: .seconds(Int64(resumeWindow)),
                                    listening: ListeningOptions(smartRewind: rewind ?? SmartRewind(),
                                                                sleepFade: .seconds(Int64(sleepFade))),
                                    skipStep: .seconds(Int64(skipStep)),
                                    titleTemplate: TitleTemplate(titleTemplate), unplugBookmark: unplugBookmark,
                                    mediaReader: mediaReaderProgram == "none" ? nil : mediaReaderProgram ?? MediaReader.ownExecutable)
        let exitCode = Mutex<Int32>(0)
        let finished = DispatchSemaphore(value: 0)
        Task {
            do {
                try await Daemon.run(options, logger: logger)
            } catch let error as DaemonError {
                logger.error("\(error)")
                exitCode.withLock { $0 = 2 }
            } catch {
                logger.error("lecternd cannot run: \(error)")
                exitCode.withLock { $0 = 1 }
            }
            finished.signal()
        }
        finished.wait()
        let code = exitCode.withLock { $0 }
        if code != 0 { throw ExitCode(code) }
    }
}

/// glibc's `mallopt(M_ARENA_MAX, count)`, looked up at run time: `malloc.h` is not part of Swift's Glibc module.
private func limitMallocArenas(to count: Int32) {
    typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
    let M_ARENA_MAX: Int32 = -8  // malloc.h
    guard let process = dlopen(nil, RTLD_NOW), let mallopt = dlsym(process, "mallopt") else { return }
    _ = unsafeBitCast(mallopt, to: Mallopt.self)(M_ARENA_MAX, count)
}
