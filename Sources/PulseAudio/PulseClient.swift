import Foundation
import Synchronization

/// A connection to the sound server that comes back: connects, reports what happens, and when the server dies
/// or isn't there, tries again with exponential backoff, until the task running ``run(_:)`` is cancelled. Where the
/// server's socket is a local path, the folder it lives in is watched meanwhile (``SocketWatch``): a socket that
/// appears ends the wait at once, and while there is none the waits grow to a minute instead of 3 s, and libpulse
/// is not even loaded (it and what it links, X11 and codecs among them, are 1.9 MB resident).
///
/// ```swift
/// let client = PulseClient(applicationName: "lectern")
/// await client.run { event in
///     switch event {
///     case .connected(let info): print("default sink", info.defaultSinkName ?? "-")
///     case .object(let change): ...          // then ask: try await client.connection?.sink(index: change.index)
///     case .disconnected(let why): ...
///     case .connectFailed: break
///     }
/// }
/// ```
public final class PulseClient: Sendable {
    /// What ``run(_:)`` reports, in order.
    public enum Event: Sendable, Hashable {
        /// A connection is ready (the first, or again after `.disconnected`); ``connection`` is set.
        case connected(PulseServerInfo)
        /// A connection attempt failed; `attempt` counts from 1 since the last time it was connected.
        case connectFailed(String, attempt: Int)
        /// A sink, sink input or the server's defaults changed.
        case object(PulseObjectEvent)
        /// The connection went away (the server died); reconnecting follows.
        case disconnected(String)
    }

    /// Delays between connection attempts: `initial`, doubling up to `maximum`, or up to `absentMaximum` while
    /// the server's socket doesn't exist, its folder is watched (its appearance ends the wait) and no other server
    /// is configured (``SocketWatch/serverConfiguredElsewhere(environment:systemSocket:systemConfig:)``).
    public struct Backoff: Sendable, Hashable {
        public var initial: Duration
        public var maximum: Duration
        public var absentMaximum: Duration
        public init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(3),
                    absentMaximum: Duration = .seconds(60)) {
            self.initial = initial
            self.maximum = maximum
            self.absentMaximum = absentMaximum
        }
        func delay(attempt: Int, upTo limit: Duration? = nil) -> Duration {
            let limit = limit ?? maximum
            var delay = initial
            for _ in 1..<max(attempt, 1) where delay < limit { delay *= 2 }
            return min(delay, limit)
        }
    }

    public let server: String?
    public let applicationName: String
    public let backoff: Backoff
    /// The local socket libpulse would connect to, when known (``SocketWatch/socketPath(server:environment:)``).
    let socketPath: String?
    private let current = Mutex<PulseConnection?>(nil)

    /// - Parameter server: a server address; nil for libpulse's default (`PULSE_SERVER`, else the user's socket).
    public init(server: String? = nil, applicationName: String, backoff: Backoff = Backoff()) {
        self.server = server
        self.applicationName = applicationName
        self.backoff = backoff
        socketPath = SocketWatch.socketPath(server: server)
    }

    /// The connection that is ready now, for queries; nil between connections.
    public var connection: PulseConnection? {
        current.withLock { connection in connection?.isConnected == true ? connection : nil }
    }

    /// Connects, hands every event to `handler` (one at a time, in order), and reconnects, until cancelled.
    public func run(_ handler: @Sendable (Event) async -> Void) async {
        var attempt = 0
        while !Task.isCancelled {
            let connection: PulseConnection
            // Read once per attempt: whether to try libpulse without the user's socket, and how long to wait after.
            let elsewhere = socketPath != nil && SocketWatch.serverConfiguredElsewhere()
            do {
                if let socketPath, access(socketPath, F_OK) != 0, !elsewhere {
                    throw PulseError.connectionFailed("no sound server: \(socketPath) does not exist")
                }
                connection = try await PulseConnection.connect(server: server, applicationName: applicationName)
                let info = try await connection.serverInfo()
                attempt = 0
                current.withLock { $0 = connection }
                await handler(.connected(info))
            } catch {
                attempt += 1
                await handler(.connectFailed("\(error)", attempt: attempt))
                if await pause(after: attempt, serverElsewhere: elsewhere) == .cancelled { break }
                continue
            }
            for await event in connection.events {
                switch event {
                case .object(let change): await handler(.object(change))
                case .disconnected(let reason): await handler(.disconnected(reason))
                }
            }
            current.withLock { $0 = nil }
            if !connection.isConnected, Task.isCancelled == false {
                // The events ended because the server went away, not because we were cancelled.
                attempt = 1
                do { try await Task.sleep(for: backoff.initial) } catch { break }
            }
        }
        current.withLock { $0 = nil }
    }

    /// The wait after failed attempt number `attempt`; `serverElsewhere`: another server than the user's socket is
    /// configured (``SocketWatch/serverConfiguredElsewhere(environment:systemSocket:systemConfig:)``).
    private func pause(after attempt: Int, serverElsewhere: Bool) async -> SocketWatch.Outcome {
        let backoff = self.backoff
        guard let socket = socketPath else {
            do { try await Task.sleep(for: backoff.delay(attempt: attempt)) } catch { return .cancelled }
            return .timedOut
        }
        return await SocketWatch.waitForChange(near: socket) { socketExists, watching in
            // A socket that refuses is a server starting or one that died: try again soon. So for a server found
            // elsewhere, and when nothing watches for the socket.
            let soon = socketExists || !watching || serverElsewhere
            return backoff.delay(attempt: attempt, upTo: soon ? backoff.maximum : backoff.absentMaximum)
        }
    }
}
