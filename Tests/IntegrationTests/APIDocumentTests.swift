import DBus
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
import TestSupport

/// The interfaces of an introspection document, reduced to what a client relies on.
struct IntrospectedAPI: Equatable, CustomStringConvertible {
    struct Arg: Equatable, CustomStringConvertible {
        var name: String
        var type: String
        var direction: String
        var description: String { "\(direction) \(name): \(type)" }
    }
    struct Property: Equatable, CustomStringConvertible {
        var type: String
        var access: String
        /// org.freedesktop.DBus.Property.EmitsChangedSignal ("true" when absent).
        var emitsChanged: String
        var description: String { "\(type) \(access) emits=\(emitsChanged)" }
    }
    struct Interface: Equatable {
        var methods: [String: [Arg]] = [:]
        var signals: [String: [Arg]] = [:]
        var properties: [String: Property] = [:]
    }
    var interfaces: [String: Interface] = [:]
    /// The comments before each method, signal and property, by "interface.member": what the document says of it
    /// (a daemon's introspection has none).
    var documentation: [String: String] = [:]

    var description: String {
        interfaces.keys.sorted().map { name in
            let i = interfaces[name]!
            return "\(name):\n" + i.methods.keys.sorted().map { "  method \($0)\(i.methods[$0]!)" }.joined(separator: "\n") + "\n"
                + i.signals.keys.sorted().map { "  signal \($0)\(i.signals[$0]!)" }.joined(separator: "\n") + "\n"
                + i.properties.keys.sorted().map { "  property \($0) \(i.properties[$0]!)" }.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// Parses introspection XML (comments and whitespace ignored by the parser).
    init(xml: String) throws {
        let delegate = Delegate()
        let parser = XMLParser(data: Data(xml.utf8))
        parser.delegate = delegate
        guard parser.parse() else { throw FixtureError("unparsable XML: \(parser.parserError.map { "\($0)" } ?? "?")") }
        self = delegate.api
    }

    private init() {}

    private final class Delegate: NSObject, XMLParserDelegate {
        var api = IntrospectedAPI()
        var interface: String?
        var member: (kind: String, name: String)?
        var property: String?
        /// The comments since the last member began.
        var comments: [String] = []

        func parser(_ parser: XMLParser, foundComment comment: String) { comments.append(comment) }

        /// The comments gathered so far are `name`'s.
        func document(_ name: String) {
            if let interface, !comments.isEmpty { api.documentation[interface + "." + name] = comments.joined(separator: "\n") }
            comments = []
        }

        func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            let name = attributes["name"] ?? ""
            switch element {
            case "interface":
                interface = name
                api.interfaces[name] = api.interfaces[name] ?? Interface()
                comments = []
            case "method":
                member = ("method", name)
                api.interfaces[interface ?? ""]?.methods[name] = []
                document(name)
            case "signal":
                member = ("signal", name)
                api.interfaces[interface ?? ""]?.signals[name] = []
                document(name)
            case "arg":
                guard let member, let interface else { return }
                if member.kind == "method" {
                    let arg = Arg(name: name, type: attributes["type"] ?? "", direction: attributes["direction"] ?? "in")
                    api.interfaces[interface]?.methods[member.name]?.append(arg)
                } else {
                    let arg = Arg(name: name, type: attributes["type"] ?? "", direction: "out")
                    api.interfaces[interface]?.signals[member.name]?.append(arg)
                }
            case "property":
                property = name
                api.interfaces[interface ?? ""]?.properties[name] =
                    Property(type: attributes["type"] ?? "", access: attributes["access"] ?? "", emitsChanged: "true")
                document(name)
            case "annotation":
                if let property, name == "org.freedesktop.DBus.Property.EmitsChangedSignal" {
                    api.interfaces[interface ?? ""]?.properties[property]?.emitsChanged = attributes["value"] ?? ""
                }
            default:
                break
            }
        }

        func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
            switch element {
            case "interface": interface = nil
            case "method", "signal": member = nil
            case "property": property = nil
            default: break
            }
        }
    }
}

extension Integration.Desktop {
    /// dbus/org.lectern.Library1.xml documents what the daemon exports.
    @Suite struct APIDocument {
        static var documentURL: URL {
            // Tests/IntegrationTests/APIDocumentTests.swift → the package root.
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("dbus/org.lectern.Library1.xml")
        }

        @Test func theRunningDaemonMatchesTheDocumentedAPI() async throws {
            let document = try IntrospectedAPI(xml: try String(contentsOf: Self.documentURL, encoding: .utf8))
            #expect(Set(document.interfaces.keys) == [Lib.library, Lib.bookmarks], "\(document.interfaces.keys)")
            #expect(document.interfaces[Lib.library]?.methods.count == 27)
            #expect(document.interfaces[Lib.bookmarks]?.methods.count == 7)
            try await DaemonFixture.with { d in
                let xml = try await d.client.call(Lib.busName, path: Lib.path, interface: MPRIS.introspectable, member: "Introspect",
                                                  [], timeout: .seconds(10)).first?.string ?? ""
                let live = try IntrospectedAPI(xml: xml)
                Self.compare(live, with: document)
                // The same document is what the bus name answers for, at the documented path.
                #expect(try await d.nameOwner(Lib.busName) == (try await d.nameOwner(MPRIS.busName)))
            }
        }

        /// The other interfaces of /org/lectern/Lectern1, each documented in a file of its own.
        @Test(arguments: ["org.lectern.Player1.xml", "org.lectern.Output1.xml", "org.lectern.Configuration1.xml",
                          "org.lectern.History1.xml", "org.lectern.Prompts1.xml", "org.lectern.Cast1.xml"])
        func theRunningDaemonMatchesTheDocument(_ file: String) async throws {
            let url = Self.documentURL.deletingLastPathComponent().appendingPathComponent(file)
            let document = try IntrospectedAPI(xml: try String(contentsOf: url, encoding: .utf8))
            #expect(Set(document.interfaces.keys) == [String(file.dropLast(4))], "\(document.interfaces.keys)")
            try await DaemonFixture.with { d in
                let xml = try await d.client.call(Lib.busName, path: Lib.path, interface: MPRIS.introspectable, member: "Introspect",
                                                  [], timeout: .seconds(10)).first?.string ?? ""
                Self.compare(try IntrospectedAPI(xml: xml), with: document)
            }
        }

        /// Records an issue for every member the daemon exports differently from the document.
        static func compare(_ live: IntrospectedAPI, with document: IntrospectedAPI,
                            sourceLocation: SourceLocation = #_sourceLocation) {
            for name in document.interfaces.keys.sorted() {
                let documented = document.interfaces[name] ?? .init()
                guard let running = live.interfaces[name] else {
                    Issue.record("the daemon does not export \(name)", sourceLocation: sourceLocation)
                    continue
                }
                #expect(running.methods.keys.sorted() == documented.methods.keys.sorted(), "\(name) methods")
                for method in documented.methods.keys.sorted() where running.methods[method] != nil {
                    #expect(running.methods[method] == documented.methods[method],
                            "\(name).\(method): daemon \(running.methods[method]!), document \(documented.methods[method]!)")
                }
                #expect(running.signals.keys.sorted() == documented.signals.keys.sorted(), "\(name) signals")
                for signal in documented.signals.keys.sorted() where running.signals[signal] != nil {
                    #expect(running.signals[signal] == documented.signals[signal],
                            "\(name).\(signal): daemon \(running.signals[signal]!), document \(documented.signals[signal]!)")
                }
                #expect(running.properties == documented.properties,
                        "\(name) properties: daemon \(running.properties), document \(documented.properties)")
            }
        }
    }
}
