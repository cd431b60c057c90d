import ArgumentParser
import Foundation
import LecternCore
import LecternDaemon
import Logging

@main
struct Lecternd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lecternd",
        abstract: "Lectern's daemon: plays audiobooks and music, controlled over D-Bus (MPRIS and Lectern's own API).")

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

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func validate() throws {
        guard OutputPolicyMode(rawValue: outputPolicy) != nil else {
            let modes = OutputPolicyMode.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("--output-policy must be one of \(modes)")
        }
    }

    func run() async throws {
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
                                    resumeWindow: .seconds(Int64(resumeWindow)))
        do {
            try await Daemon.run(options, logger: logger)
        } catch let error as DaemonError {
            logger.error("\(error)")
            throw ExitCode(2)
        } catch {
            logger.error("lecternd cannot run: \(error)")
            throw ExitCode(1)
        }
    }
}
