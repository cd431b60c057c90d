import DBus
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
import TestSupport

extension Integration.Desktop {
    /// What a client sees before anything is played: the root interface, the Player's properties and their
    /// types, introspection, and a player with nothing loaded.
    @Suite struct RootAndIntrospection {
        @Test func rootInterfaceIdentifiesLectern() async throws {
            try await DaemonFixture.with { d in
                let root = try await d.getAll(MPRIS.root)
                #expect(root["Identity"] == .string("Lectern"))
                #expect(root["DesktopEntry"] == .string("org.lectern.Lectern"), "names the installed org.lectern.Lectern.desktop")
                #expect(root["CanQuit"] == .boolean(true))
                #expect(root["CanRaise"] == .boolean(false))
                #expect(root["HasTrackList"] == .boolean(true))
                #expect(root["SupportedUriSchemes"]?.type == .array(.string))
                #expect(root["SupportedUriSchemes"]?.stringArray?.contains("file") == true)
                #expect(root["SupportedMimeTypes"]?.type == .array(.string))
                // Each one also through Get, with the same value.
                for (name, value) in root {
                    #expect(try await d.get(name, interface: MPRIS.root) == value, "Get \(name)")
                }
            }
        }

        static let playerPropertyTypes: [String: DBusType] = [
            "PlaybackStatus": .string, "LoopStatus": .string, "Rate": .double, "Shuffle": .boolean,
            "Metadata": .dictionary(key: .string, value: .variant), "Volume": .double, "Position": .int64,
            "MinimumRate": .double, "MaximumRate": .double, "CanGoNext": .boolean, "CanGoPrevious": .boolean,
            "CanPlay": .boolean, "CanPause": .boolean, "CanSeek": .boolean, "CanControl": .boolean,
        ]

        @Test func everyPlayerPropertyIsInGetAllWithTheSpecType() async throws {
            try await DaemonFixture.with { d in
                // GetAll raw, so the Metadata map's own type is visible (not only its entries).
                let reply = try await d.call("GetAll", [.string(MPRIS.player)], interface: MPRIS.properties)
                #expect(reply.first?.type == .dictionary(key: .string, value: .variant))
                let all = reply.first?.stringKeyedDictionary ?? [:]
                for (name, type) in Self.playerPropertyTypes {
                    #expect(all[name]?.type == type, "\(name) in GetAll: \(all[name].map { "\($0)" } ?? "missing")")
                    #expect(try await d.get(name).type == type, "Get \(name)")
                }
                #expect(all["CanControl"] == .boolean(true))
                let minimum = all["MinimumRate"]?.double ?? .nan
                let maximum = all["MaximumRate"]?.double ?? .nan
                #expect(minimum > 0 && minimum <= 1, "MinimumRate \(minimum)")
                #expect(maximum >= 1, "MaximumRate \(maximum)")
                #expect(all["Rate"] == .double(1))
                #expect(all["LoopStatus"] == .string("None"))
                #expect(all["Shuffle"] == .boolean(false))
            }
        }

        @Test func introspectionDescribesOnlyTheMPRISInterfacesAndLetsBusctlWalkDown() async throws {
            try await DaemonFixture.with { d in
                let xml = try await d.call("Introspect", interface: MPRIS.introspectable).first?.string ?? ""
                let node = try IntrospectedNode(xml: xml)
                #expect(Set(node.interfaces.keys) == [MPRIS.root, MPRIS.player, MPRIS.trackList, MPRIS.playlists, MPRIS.properties,
                                                      MPRIS.introspectable, MPRIS.peer],
                        "interfaces on \(MPRIS.path): \(node.interfaces.keys.sorted())")

                let player = node.interfaces[MPRIS.player]
                #expect(player?.properties["Position"]?.type == "x")
                #expect(player?.properties["Position"]?.annotations["org.freedesktop.DBus.Property.EmitsChangedSignal"] == "false")
                for name in ["Next", "Previous", "Pause", "PlayPause", "Stop", "Play", "Seek", "SetPosition", "OpenUri"] {
                    #expect(player?.methods.contains(name) == true, "method \(name)")
                }
                #expect(player?.signals.contains("Seeked") == true)
                for (name, type) in Self.playerPropertyTypes {
                    #expect(player?.properties[name]?.type == type.signature, "introspected type of \(name)")
                }
                for name in ["LoopStatus", "Rate", "Shuffle", "Volume"] {
                    #expect(player?.properties[name]?.access == "readwrite", "\(name) is writable")
                }
                #expect(player?.properties["PlaybackStatus"]?.access == "read")
                let root = node.interfaces[MPRIS.root]
                #expect(root?.methods.isSuperset(of: ["Raise", "Quit"]) == true)

                // The parents introspect with their children, down to the object.
                for (path, child) in [("/", "org"), ("/org", "mpris"), ("/org/mpris", "MediaPlayer2")] {
                    let parentXML = try await d.call("Introspect", interface: MPRIS.introspectable, path: path).first?.string ?? ""
                    let parent = try IntrospectedNode(xml: parentXML)
                    #expect(parent.children.contains(child), "Introspect \(path): children \(parent.children)")
                }

                let tree = try await Subprocess.run("busctl", ["--address=\(d.bus.address)", "tree", MPRIS.busName],
                                                    env: d.environment, timeout: .seconds(20))
                #expect(tree.status == 0, "busctl tree: \(tree.stderr)")
                #expect(tree.stdout.contains("/org/mpris/MediaPlayer2"), "busctl tree:\n\(tree.stdout)")
            }
        }

        @Test func withNothingLoadedAndNoBookEverPlayedThereIsNothingToPlay() async throws {
            try await DaemonFixture.with { d in
                let all = try await d.getAll()
                #expect(all["Metadata"] == .emptyVardict, "Metadata \(all["Metadata"].map { "\($0)" } ?? "missing")")
                #expect(all["PlaybackStatus"] == .string("Stopped"))
                #expect(all["CanPlay"] == .boolean(false))
                #expect(all["CanPause"] == .boolean(false))
                #expect(all["CanSeek"] == .boolean(false))
                #expect(all["CanGoNext"] == .boolean(false))
                #expect(all["CanGoPrevious"] == .boolean(false))
                #expect(all["Position"] == .int64(0))

                let mark = d.signals.mark
                let playPauseError = await d.errorName { try await d.call("PlayPause") }
                #expect(playPauseError != nil, "PlayPause with nothing loaded must fail")
                // Play and the other commands do nothing.
                try await d.call("Play")
                try await d.call("Pause")
                try await d.call("Next")
                try await d.call("Previous")
                try await d.call("Seek", [.int64(1_000_000)])
                try await d.call("Stop")
                try await d.signals.barrier()
                #expect(d.signals.values(of: "PlaybackStatus", since: mark).isEmpty)
                #expect(d.signals.values(of: "Metadata", since: mark).isEmpty)
                #expect(d.signals.seeked(since: mark).isEmpty)
                #expect(try await d.status() == "Stopped")
                #expect(try await d.metadata().isEmpty)

                let status = try await d.playerctl("status")
                #expect(status.stdout == "Stopped", "playerctl status: \(status)")
            }
        }
    }
}

/// One node of introspection XML: its interfaces (methods, signals, properties with annotations) and children.
struct IntrospectedNode {
    struct PropertyInfo { var type = "", access = "", annotations: [String: String] = [:] }
    struct InterfaceInfo {
        var methods: Set<String> = []
        var signals: Set<String> = []
        var properties: [String: PropertyInfo] = [:]
    }
    var interfaces: [String: InterfaceInfo] = [:]
    var children: [String] = []

    init(xml: String) throws {
        let delegate = Delegate()
        let parser = XMLParser(data: Data(xml.utf8))
        parser.delegate = delegate
        guard parser.parse() else {
            throw FixtureError("introspection XML does not parse (\(parser.parserError.map { "\($0)" } ?? "?")):\n\(xml)")
        }
        interfaces = delegate.interfaces
        children = delegate.children
    }

    private final class Delegate: NSObject, XMLParserDelegate {
        var interfaces: [String: InterfaceInfo] = [:]
        var children: [String] = []
        var depth = 0
        var interface: String?
        var property: String?

        func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?,
                    qualifiedName: String?, attributes: [String: String] = [:]) {
            depth += 1
            let name = attributes["name"] ?? ""
            switch element {
            case "node" where depth == 2: children.append(name)
            case "interface": interface = name; interfaces[name] = interfaces[name] ?? InterfaceInfo()
            case "method": if let interface { interfaces[interface]?.methods.insert(name) }
            case "signal": if let interface { interfaces[interface]?.signals.insert(name) }
            case "property":
                if let interface {
                    property = name
                    interfaces[interface]?.properties[name] = PropertyInfo(type: attributes["type"] ?? "",
                                                                           access: attributes["access"] ?? "")
                }
            case "annotation":
                if let interface, let property {
                    interfaces[interface]?.properties[property]?.annotations[name] = attributes["value"] ?? ""
                }
            default: break
            }
        }

        func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
            depth -= 1
            if element == "interface" { interface = nil }
            if element == "property" { property = nil }
        }
    }
}
