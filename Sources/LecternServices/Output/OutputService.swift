import DBus
import LecternConfiguration
import LecternCore
import LecternSoundServer

/// org.lectern.Output1 (dbus/org.lectern.Output1.xml), the output watcher's D-Bus face: CurrentOutput, ServerConnected,
/// LastRouteEvent and RouteChanged published from the watcher's changes; Policy and ResumeWindow set the policy's,
/// Interruptions the player's.
///
/// ```swift
/// let object = try connection.export(path, interfaces: [OutputService.makeInterface(watcher)])
/// await OutputService.publish(watcher, on: object)
/// ```
public enum OutputService {
    static let interfaceName = "org.lectern.Output1"

    /// `org.lectern.Output1`, for Lectern's object; its setters call `watcher`.
    public static func makeInterface(_ watcher: OutputWatcher) -> Interface {
        Interface(interfaceName,
            properties: [
                Property("CurrentOutput", .string),
                Property("ServerConnected", .boolean),
                Property("LastRouteEvent", routeEventType),
                Property("Policy", .string, access: .readwrite, set: { [weak watcher] value in
                    guard let mode = OutputPolicyMode(rawValue: try value.decoded(as: String.self)) else {
                        let modes = OutputPolicyMode.allCases.map(\.rawValue).joined(separator: ", ")
                        throw BusError.invalidArgs("Policy must be one of \(modes), not \(value)")
                    }
                    await watcher?.setMode(mode)
                }),
                Property("ResumeWindow", .uint32, access: .readwrite, set: { [weak watcher] value in
                    let seconds: UInt32 = try value.decoded()
                    guard seconds <= DaemonOptions.longestResumeWindow else {
                        throw BusError.invalidArgs("ResumeWindow is at most \(DaemonOptions.longestResumeWindow) seconds (a day), not \(seconds)")
                    }
                    await watcher?.setResumeWindow(.seconds(Int64(seconds)))
                }),
                Property("Interruptions", .string, access: .readwrite, set: { [weak watcher] value in
                    guard let mode = InterruptionMode(rawValue: try value.decoded(as: String.self)) else {
                        let modes = InterruptionMode.allCases.map(\.rawValue).joined(separator: ", ")
                        throw BusError.invalidArgs("Interruptions must be one of \(modes), not \(value)")
                    }
                    await watcher?.setInterruptions(mode)
                }),
            ],
            signals: [SignalDecl("RouteChanged", [("event", routeEventType)])])
    }

    /// Stores the watcher's status on `object` and keeps it up to date from now on.
    public static func publish(_ watcher: OutputWatcher, on object: ExportedObject) async {
        let status = await watcher.observe { change in
            switch change {
            case .currentOutput(let name): object.update(interfaceName, ["CurrentOutput": .string(name)])
            case .serverConnected(let connected): object.update(interfaceName, ["ServerConnected": .boolean(connected)])
            case .policy(let mode): object.update(interfaceName, ["Policy": .string(mode.rawValue)])
            case .resumeWindow(let window): object.update(interfaceName, ["ResumeWindow": seconds(window)])
            case .interruptions(let mode): object.update(interfaceName, ["Interruptions": .string(mode.rawValue)])
            case .routeEvent(let event):
                object.update(interfaceName, ["LastRouteEvent": value(event)])
                try? object.emit(interfaceName, "RouteChanged", [value(event)])
            }
        }
        object.update(interfaceName, [
            "CurrentOutput": .string(status.currentOutput),
            "ServerConnected": .boolean(status.serverConnected),
            "LastRouteEvent": value(status.lastEvent),
            "Policy": .string(status.policy.rawValue),
            "ResumeWindow": seconds(status.resumeWindow),
            "Interruptions": .string(status.interruptions.rawValue),
        ])
    }

    static let routeEventType = DBusType.structure([.string, .string, .string, .string, .int64])

    public static func value(_ event: OutputWatcher.RouteEvent) -> DBusValue {
        .structure([.string(event.kind.rawValue), .string(event.output), .string(event.port), .string(event.action.rawValue),
                    .int64(event.time)])
    }

    private static func seconds(_ window: Duration) -> DBusValue { .uint32(UInt32(clamping: window.components.seconds)) }
}
