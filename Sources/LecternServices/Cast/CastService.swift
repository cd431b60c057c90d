import DBus
import UPnP

/// org.lectern.Cast1 (dbus/org.lectern.Cast1.xml): the home network's renderers, as the browser finds them. Network
/// and Problem say whether lecternd is on the network and, when it cannot be, why.
///
/// ```swift
/// let object = try connection.export(path, interfaces: [CastService.makeInterface()])
/// CastService.publish(browser, problem: "", on: object)
/// ```
public enum CastService {
    static let interfaceName = "org.lectern.Cast1"

    /// `org.lectern.Cast1`, for Lectern's object.
    public static func makeInterface() -> Interface {
        Interface(interfaceName, properties: [
            Property("Network", .boolean),
            Property("Problem", .string),
            Property("Renderers", renderersType),
        ])
    }

    /// Stores the network's state on `object`, and the browser's renderers as they come and go (nil: the network is
    /// off, or could not start, and `problem` says why).
    public static func publish(_ browser: RendererBrowser?, problem: String, on object: ExportedObject) {
        object.update(interfaceName, ["Network": .boolean(browser != nil), "Problem": .string(problem),
                                      "Renderers": renderers(browser?.renderers ?? [])])
        guard let browser else { return }
        Task {
            for await _ in browser.changes { object.update(interfaceName, ["Renderers": renderers(browser.renderers)]) }
        }
    }

    /// Each renderer: its name, its UDN, the host its description is on (an address), the interface it was found on.
    static let renderersType = DBusType.array(.structure([.string, .string, .string, .string]))

    static func renderers(_ renderers: [Renderer]) -> DBusValue {
        .array(.structure([.string, .string, .string, .string]), renderers.map { renderer in
            .structure([.string(renderer.name), .string(renderer.udn), .string(address(of: renderer.location)),
                        .string(renderer.interface)])
        })
    }

    /// The host part of a description's URL ("http://192.168.1.20:49152/desc.xml": "192.168.1.20").
    static func address(of location: String) -> String {
        guard let scheme = location.range(of: "://") else { return "" }
        let rest = location[scheme.upperBound...]
        let authority = rest.prefix { $0 != "/" }
        if authority.hasPrefix("["), let end = authority.firstIndex(of: "]") {
            return String(authority[authority.index(after: authority.startIndex)..<end])
        }
        return String(authority.prefix { $0 != ":" })
    }
}
