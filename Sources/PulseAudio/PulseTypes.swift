/// Values read from the sound server, converted at the C boundary: no libpulse pointer outlives the callback
/// that produced it.

/// A port of a sink (e.g. "analog-output-headphones"), with whether something is plugged into it.
public struct PulsePort: Sendable, Hashable {
    /// Whether the port can be used now (pa_port_available_t).
    public enum Availability: Sendable, Hashable {
        /// The hardware can't tell (PA_PORT_AVAILABLE_UNKNOWN): treated as usable.
        case unknown
        /// Unplugged (PA_PORT_AVAILABLE_NO).
        case no
        /// Plugged in (PA_PORT_AVAILABLE_YES).
        case yes
    }

    public var name: String
    public var description: String
    public var availability: Availability

    public init(name: String, description: String = "", availability: Availability = .unknown) {
        self.name = name
        self.description = description
        self.availability = availability
    }
}

/// One sink (an output device as the sound server knows it), from pa_sink_info.
///
/// ```swift
/// let sinks = try await client.sinks()
/// let headphones = sinks.first { $0.name == "headphones" }
/// ```
public struct PulseSink: Sendable, Hashable {
    /// The server's index; reused only after a server restart.
    public var index: UInt32
    /// The stable name (`alsa_output.pci-0000_00_1f.3.analog-stereo`, or a null sink's `sink_name`).
    public var name: String
    public var description: String
    public var ports: [PulsePort]
    /// The name of the active port, if the sink has ports (null sinks have none).
    public var activePort: String?

    public init(index: UInt32, name: String, description: String = "", ports: [PulsePort] = [], activePort: String? = nil) {
        self.index = index
        self.name = name
        self.description = description
        self.ports = ports
        self.activePort = activePort
    }

    /// The active port's description, if there is an active port.
    public var activePortInfo: PulsePort? { ports.first { $0.name == activePort } }
}

/// A playback stream (pa_sink_input_info): which sink it plays to and whose it is.
public struct PulseSinkInput: Sendable, Hashable {
    public var index: UInt32
    /// The index of the sink it plays to.
    public var sinkIndex: UInt32
    /// The `application.process.id` property, when the client set it (libpulse does by default).
    public var processID: Int32?
    /// The `application.name` property.
    public var applicationName: String?
    /// Whether the server mutes it (a mixer, or a policy such as PulseAudio's module-role-cork during a call).
    public var muted: Bool

    public init(index: UInt32, sinkIndex: UInt32, processID: Int32? = nil, applicationName: String? = nil,
                muted: Bool = false) {
        self.index = index
        self.sinkIndex = sinkIndex
        self.processID = processID
        self.applicationName = applicationName
        self.muted = muted
    }
}

/// What pa_context_get_server_info says.
public struct PulseServerInfo: Sendable, Hashable {
    public var serverName: String
    public var serverVersion: String
    /// The sink new streams go to, if there is one, as the server names it: pipewire-pulse may say `@DEFAULT_SINK@`
    /// just after it starts (ask for the sink by this name to learn which it is).
    public var defaultSinkName: String?

    public init(serverName: String, serverVersion: String, defaultSinkName: String?) {
        self.serverName = serverName
        self.serverVersion = serverVersion
        self.defaultSinkName = defaultSinkName
    }
}

/// A subscription event (pa_subscription_event_type_t): a kind of object was added, changed or removed.
/// It names the object by index only; ask for its details with a query.
public struct PulseObjectEvent: Sendable, Hashable {
    public enum Facility: Sendable, Hashable {
        case sink, sinkInput, server
    }
    public enum Change: Sendable, Hashable {
        case new, change, remove
    }

    public var facility: Facility
    public var change: Change
    public var index: UInt32

    public init(_ facility: Facility, _ change: Change, index: UInt32) {
        self.facility = facility
        self.change = change
        self.index = index
    }
}

/// Errors from libpulse, with the server's own message where there is one.
public enum PulseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// pa_context_connect failed, or the context failed before it was ready.
    case connectionFailed(String)
    /// The connection is gone (the server died, or it was closed); pending queries end with this.
    case disconnected(String)
    /// The server refused a request (e.g. no such entity).
    case requestFailed(String)
    /// Nothing is connected now.
    case notConnected

    public var description: String {
        switch self {
        case .connectionFailed(let m): return "cannot connect to PulseAudio: \(m)"
        case .disconnected(let m): return "PulseAudio connection lost: \(m)"
        case .requestFailed(let m): return "PulseAudio request failed: \(m)"
        case .notConnected: return "not connected to PulseAudio"
        }
    }
}

extension PulseSink {
    /// The jack events between `old` and this later snapshot of the same sink: whether the port that was active
    /// got unplugged (usable before, unavailable now, whatever port the server made active since), and which
    /// ports were plugged in (unavailable before, usable now).
    ///
    /// ```swift
    /// let change = new.jackChanges(since: old)
    /// if let port = change.unplugged { print("\(port) unplugged") }
    /// ```
    public func jackChanges(since old: PulseSink) -> (unplugged: String?, pluggedIn: [String]) {
        var unplugged: String?
        if let port = old.activePort, old.activePortInfo?.availability != .no,
           ports.first(where: { $0.name == port })?.availability == .no {
            unplugged = port
        }
        let pluggedIn = ports.filter { port in
            port.availability != .no && old.ports.first(where: { $0.name == port.name })?.availability == .no
        }
        return (unplugged, pluggedIn.map(\.name))
    }
}
