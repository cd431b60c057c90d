import DBus
import Foundation
import LecternCore

// org.lectern.Output1 (dbus/org.lectern.Output1.xml), the watcher's D-Bus face: CurrentOutput, ServerConnected,
// LastRouteEvent and RouteChanged published from the watcher's state; Policy and ResumeWindow set the policy's,
// Interruptions the player's.
extension OutputWatcher {
    /// The last route event, as `LastRouteEvent` and `RouteChanged` carry it.
    struct RouteEvent: Sendable, Equatable {
        enum Kind: String, Sendable {
            case none
            case outputLost = "output-lost"
            case outputReturned = "output-returned"
            case serverLost = "server-lost"
            case serverReturned = "server-returned"
            /// Another sound asked for the output (a call started).
            case interrupted
            /// It gave the output back (the call ended).
            case interruptionEnded = "interruption-ended"
        }
        enum Action: String, Sendable {
            case none, paused, resumed
        }
        var kind: Kind
        var output: String
        var port: String
        var action: Action
        /// Microseconds since the Unix epoch; 0 for `.none`.
        var time: Int64

        static let initial = RouteEvent(kind: .none, output: "", port: "", action: .none, time: 0)

        var value: DBusValue {
            .structure([.string(kind.rawValue), .string(output), .string(port), .string(action.rawValue), .int64(time)])
        }
        static let type = DBusType.structure([.string, .string, .string, .string, .int64])
    }

    /// `org.lectern.Output1`, for Lectern's object; its setters call this watcher.
    public nonisolated func makeInterface() -> Interface {
        Interface(Self.interfaceName,
            properties: [
                Property("CurrentOutput", .string),
                Property("ServerConnected", .boolean),
                Property("LastRouteEvent", RouteEvent.type),
                Property("Policy", .string, access: .readwrite, set: { [weak self] value in
                    guard let mode = OutputPolicyMode(rawValue: try value.decoded(as: String.self)) else {
                        let modes = OutputPolicyMode.allCases.map(\.rawValue).joined(separator: ", ")
                        throw BusError.invalidArgs("Policy must be one of \(modes), not \(value)")
                    }
                    await self?.setMode(mode)
                }),
                Property("ResumeWindow", .uint32, access: .readwrite, set: { [weak self] value in
                    let seconds: UInt32 = try value.decoded()
                    guard seconds <= DaemonOptions.longestResumeWindow else {
                        throw BusError.invalidArgs("ResumeWindow is at most \(DaemonOptions.longestResumeWindow) seconds (a day), not \(seconds)")
                    }
                    await self?.setResumeWindow(.seconds(Int64(seconds)))
                }),
                Property("Interruptions", .string, access: .readwrite, set: { [weak self] value in
                    guard let mode = InterruptionMode(rawValue: try value.decoded(as: String.self)) else {
                        let modes = InterruptionMode.allCases.map(\.rawValue).joined(separator: ", ")
                        throw BusError.invalidArgs("Interruptions must be one of \(modes), not \(value)")
                    }
                    await self?.setInterruptions(mode)
                }),
            ],
            signals: [SignalDecl("RouteChanged", [("event", RouteEvent.type)])])
    }

    /// Stores the initial values on `object` and keeps them up to date from now on; gives the player its
    /// interruption mode.
    public func publish(on object: ExportedObject) async {
        self.object = object
        await player.setInterruptions(interruptions)
        object.update(Self.interfaceName, [
            "CurrentOutput": .string(soundServer.currentOutput),
            "ServerConnected": .boolean(soundServer.connected),
            "LastRouteEvent": lastEvent.value,
            "Policy": .string(policy.mode.rawValue),
            "ResumeWindow": .uint32(UInt32(clamping: policy.resumeWindow.components.seconds)),
            "Interruptions": .string(interruptions.rawValue),
        ])
    }

    func setMode(_ mode: OutputPolicyMode) {
        policy.mode = mode
        object?.update(Self.interfaceName, ["Policy": .string(mode.rawValue)])
    }

    func setResumeWindow(_ window: Duration) {
        policy.resumeWindow = window
        object?.update(Self.interfaceName, ["ResumeWindow": .uint32(UInt32(clamping: window.components.seconds))])
    }

    func setInterruptions(_ mode: InterruptionMode) async {
        interruptions = mode
        await player.setInterruptions(mode)
        object?.update(Self.interfaceName, ["Interruptions": .string(mode.rawValue)])
    }

    /// Recomputes the output in use and publishes it when it changed.
    func updateCurrentOutput() {
        guard let name = soundServer.settleCurrentOutput() else { return }
        object?.update(Self.interfaceName, ["CurrentOutput": .string(name)])
    }

    func publishServerConnected() {
        object?.update(Self.interfaceName, ["ServerConnected": .boolean(soundServer.connected)])
    }

    /// Notes a route event as the last one, and announces it.
    func record(_ kind: RouteEvent.Kind, output: String, port: String = "", action: RouteEvent.Action) {
        let now = Date().timeIntervalSince1970
        lastEvent = RouteEvent(kind: kind, output: output, port: port, action: action, time: Int64(now * 1_000_000))
        object?.update(Self.interfaceName, ["LastRouteEvent": lastEvent.value])
        try? object?.emit(Self.interfaceName, "RouteChanged", [lastEvent.value])
    }
}
