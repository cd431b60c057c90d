import DBus
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// What a bus name exports, as its Introspectable data says, walked recursively from `/`.
struct ExportedAPI: Sendable {
    struct Method: Sendable, CustomStringConvertible {
        var name: String
        var inputs: [DBusType]
        var description: String { "\(name)(\(inputs.map(\.signature).joined()))" }
    }
    struct Property: Sendable {
        var name: String
        var type: DBusType
        var writable: Bool
    }
    struct Interface: Sendable {
        var name: String
        var methods: [Method] = []
        var properties: [Property] = []
    }
    struct Object: Sendable {
        var path: String
        var interfaces: [Interface]
    }

    var objects: [Object]

    /// Introspects `destination` from `/` down; objects without interfaces of their own (the parents) are kept
    /// too, with the standard interfaces they answer.
    static func walk(_ connection: BusConnection, destination: String) async throws -> ExportedAPI {
        var objects: [Object] = []
        var pending = ["/"]
        while let path = pending.first {
            pending.removeFirst()
            let reply = try await connection.call(destination, path: path, interface: "org.freedesktop.DBus.Introspectable",
                                                  member: "Introspect", timeout: .seconds(10))
            guard let xml = reply.first?.string else { throw RigError("Introspect \(path) returned \(reply)") }
            let parsed = try IntrospectionParser.parse(xml)
            objects.append(Object(path: path, interfaces: parsed.interfaces))
            pending += parsed.children.map { path == "/" ? "/\($0)" : "\(path)/\($0)" }
        }
        return ExportedAPI(objects: objects.sorted { $0.path < $1.path })
    }
}

/// Reads `<node>` introspection XML: interfaces with their methods' in-arguments and properties, and child nodes.
private final class IntrospectionParser: NSObject, XMLParserDelegate {
    private(set) var interfaces: [ExportedAPI.Interface] = []
    private(set) var children: [String] = []
    private var method: ExportedAPI.Method?
    private var depth = 0
    private var problem: String?

    static func parse(_ xml: String) throws -> (interfaces: [ExportedAPI.Interface], children: [String]) {
        let delegate = IntrospectionParser()
        let parser = XMLParser(data: Data(xml.utf8))
        parser.delegate = delegate
        guard parser.parse(), delegate.problem == nil else {
            throw RigError("bad introspection XML (\(delegate.problem ?? "\(parser.parserError.map { "\($0)" } ?? "?")")):\n\(xml)")
        }
        return (delegate.interfaces, delegate.children)
    }

    func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        depth += 1
        switch element {
        case "node" where depth == 2:
            if let name = attributes["name"] { children.append(name) }
        case "interface":
            interfaces.append(.init(name: attributes["name"] ?? ""))
        case "method":
            method = .init(name: attributes["name"] ?? "", inputs: [])
        case "arg" where method != nil && attributes["direction", default: "in"] == "in":
            guard let type = attributes["type"].flatMap(DBusType.init) else {
                problem = "argument type \(attributes["type"] ?? "nil")"
                return
            }
            method?.inputs.append(type)
        case "property":
            guard let type = attributes["type"].flatMap(DBusType.init) else {
                problem = "property type \(attributes["type"] ?? "nil")"
                return
            }
            interfaces[interfaces.count - 1].properties.append(
                .init(name: attributes["name"] ?? "", type: type, writable: attributes["access"]?.contains("write") == true))
        default:
            break
        }
    }

    func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
        depth -= 1
        if element == "method", let method, !interfaces.isEmpty {
            interfaces[interfaces.count - 1].methods.append(method)
            self.method = nil
        }
    }
}
