import DBus
import Dispatch
import Foundation
import GStreamer
import LecternCore
import Logging

/// How `lecternd` was asked to run.
public struct DaemonOptions: Sendable {
    /// A GStreamer pipeline description for the output; nil = autoaudiosink.
    public var audioSink: String?
    /// The bus to use; nil = the session bus.
    public var busAddress: String?
    /// Where embedded covers are written; default `$XDG_CACHE_HOME/lectern/covers`.
    public var cacheDirectory: URL

    public init(audioSink: String? = nil, busAddress: String? = nil, cacheDirectory: URL? = nil) {
        self.audioSink = audioSink
        self.busAddress = busAddress
        self.cacheDirectory = cacheDirectory ?? XDG.cacheHome.appendingPathComponent("lectern")
    }
}

public enum DaemonError: Error, CustomStringConvertible {
    case alreadyRunning(String)

    public var description: String {
        switch self {
        case .alreadyRunning(let detail): return "lecternd is already running on this bus (\(detail))"
        }
    }
}

/// `lecternd`: wires the bus, the engine, the player and the MPRIS face together, and runs until
/// SIGTERM/SIGINT, a client's Quit, or the bus going away.
public enum Daemon {
    /// Lectern's own name; owning it is what makes an instance the one instance on a bus.
    public static let busName = "org.lectern.Lectern1"
    public static let mprisName = "org.mpris.MediaPlayer2.lectern"

    public static func run(_ options: DaemonOptions, logger: Logger) async throws {
        GStreamer.initialize()
        let connection = try options.busAddress.map(BusConnection.init(address:)) ?? BusConnection.session()
        defer { connection.close() }

        switch try await connection.requestName(busName) {
        case .primaryOwner, .alreadyOwner:
            break
        default:
            let owner = try? await connection.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                   interface: "org.freedesktop.DBus", member: "GetNameOwner",
                                                   [.string(busName)]).first?.string
            throw DaemonError.alreadyRunning("\(busName) is owned by \(owner ?? "another process")")
        }

        let engine = try GStreamerEngine(audioSink: options.audioSink)
        let mpris = MPRISService()
        let player = Player(engine: engine, logger: logger, observer: mpris.handle)
        let opener = MediaOpener(coverDirectory: options.cacheDirectory.appendingPathComponent("covers"), logger: logger)
        let (quitRequests, quit) = AsyncStream.makeStream(of: String.self)
        try await mpris.export(on: connection, player: player, opener: opener, quit: { quit.yield("Quit") })

        var mprisName = Self.mprisName
        if try await connection.requestName(mprisName) != .primaryOwner {
            mprisName += ".instance\(getpid())"
            _ = try await connection.requestName(mprisName)
        }
        logger.info("lecternd ready", metadata: ["bus": "\(connection.uniqueName)", "mpris": "\(mprisName)",
                                                 "sink": "\(options.audioSink ?? "autoaudiosink")"])

        let signals = SignalWatcher(signals: [SIGTERM, SIGINT, SIGHUP]) { quit.yield("signal \($0)") }
        defer { signals.cancel() }

        await withTaskGroup(of: String.self) { group in
            group.addTask { await connection.serveCalls(); return "the bus connection closed" }
            group.addTask { await player.run(); return "the player stopped" }
            group.addTask {
                for await reason in quitRequests { return reason }
                return "cancelled"
            }
            let reason = await group.next() ?? "?"
            logger.info("lecternd stopping", metadata: ["reason": "\(reason)"])
            await player.stop()
            try? await connection.releaseName(mprisName)
            try? await connection.releaseName(busName)
            group.cancelAll()
        }
    }
}

/// Turns POSIX signals into calls of `handler` on a dispatch queue (never in signal context).
// @unchecked: the sources are set once in init; dispatch sources are thread-safe to cancel.
final class SignalWatcher: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    init(signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "lectern.signals")
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }

    func cancel() { sources.forEach { $0.cancel() } }
}

/// The XDG base directories, with the specification's defaults.
public enum XDG {
    static func directory(_ variable: String, default relative: String) -> URL {
        let environment = ProcessInfo.processInfo.environment
        if let value = environment[variable], value.hasPrefix("/") { return URL(fileURLWithPath: value) }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(relative)
    }
    public static var cacheHome: URL { directory("XDG_CACHE_HOME", default: ".cache") }
    public static var dataHome: URL { directory("XDG_DATA_HOME", default: ".local/share") }
}
