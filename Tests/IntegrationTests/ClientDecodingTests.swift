import DBus
import Foundation
import LecternClient
import Testing
import TestSupport

extension Integration.Desktop {
    /// What the client (Sources/LecternClient) reads of each reply, signal and property is what the API documents:
    /// the arguments' names and types in dbus/*.xml; an `a{sv}`'s keys with the type its documentation gives them
    /// ("status s", "speed (d)", "listened and content (x, µs)"); a struct's fields in the order it lists them ("in
    /// this order: id (x), shelf (x), …"). MPRIS's are held against what the running daemon declares and sends.
    @Suite struct ClientDecodings {
        /// Every dbus/*.xml, as one document.
        static func documentedAPI() throws -> IntrospectedAPI {
            let folder = APIDocument.documentURL.deletingLastPathComponent()
            var api = try IntrospectedAPI(xml: "<node/>")
            for file in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() where file.hasSuffix(".xml") {
                let document = try IntrospectedAPI(xml: try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8))
                api.interfaces.merge(document.interfaces) { $1 }
                api.documentation.merge(document.documentation) { $1 }
            }
            return api
        }

        @Test func eachDecodingReadsWhatTheXMLDocuments() throws {
            let api = try Self.documentedAPI()
            let decodings = API.decodings.filter { $0.source.interface != .mprisPlayer }
            #expect(decodings.count > 30, "the decodings of Lectern's own interfaces: \(decodings.map(\.source))")
            for decoding in decodings {
                let problems = Self.problems(of: decoding, in: api)
                #expect(problems.isEmpty, "\(decoding.source) reads what dbus/*.xml does not document:\n\(problems.joined(separator: "\n"))")
            }
        }

        @Test func theMPRISDecodingsReadWhatTheDaemonDeclaresAndSends() async throws {
            let directory = try TemporaryDirectory(prefix: "lectern-decodings")
            defer { directory.remove() }
            try await DaemonFixture.with { d in
                let xml = try await d.client.call(MPRIS.busName, path: MPRIS.path, interface: MPRIS.introspectable, member: "Introspect",
                                                  [], timeout: .seconds(10)).first?.string ?? ""
                let declared = try #require(try IntrospectedAPI(xml: xml).interfaces[MPRIS.player]).properties
                // A track with every key the client reads: tags, and lyrics beside it (xesam:asText).
                let file = directory.appending("tagged.mp3")
                try FileManager.default.copyItem(at: d.media.taggedMP3, to: file)
                try Data("[00:00.50]a line\n".utf8).write(to: directory.appending("tagged.lrc"))
                try await d.openURI(file)
                let metadata = try await d.waitForProperty("Metadata") { value in
                    ["xesam:asText", "mpris:length"].allSatisfy { value.stringKeyedDictionary?[$0] != nil }
                }.stringKeyedDictionary ?? [:]
                let decodings = API.decodings.filter { $0.source.interface == .mprisPlayer }
                #expect(decodings.count == 3, "\(decodings.map(\.source))")
                for decoding in decodings {
                    for read in decoding.reads {
                        if read.path.count == 1 {
                            #expect(declared[read.name]?.type == read.signature,
                                    "\(decoding.source): \(read), lecternd declares \(declared[read.name].map { "\($0)" } ?? "no such property")")
                        } else {
                            #expect(read.path.count == 2 && read.path[0] == "Metadata" && read.kind == .key, "\(decoding.source): \(read)")
                            #expect(metadata[read.name]?.type.signature == read.signature,
                                    "\(decoding.source): \(read), lecternd sends \(metadata[read.name].map { "\($0)" } ?? "no such key")")
                        }
                    }
                }
            }
        }

        // MARK: - Against the document

        /// How `decoding` differs from what `api` documents of its source; empty when it reads only what is documented.
        static func problems(of decoding: any RecordedDecoding, in api: IntrospectedAPI) -> [String] {
            let reads = decoding.reads
            let interface = decoding.source.interface.name
            guard let documented = api.interfaces[interface] else { return ["no interface \(interface) in dbus/*.xml"] }
            let arguments: [(name: String, type: String)]
            let member: String
            switch decoding.source {
            case .reply(_, let method):
                guard let args = documented.methods[method] else { return ["no method \(method)"] }
                (member, arguments) = (method, args.filter { $0.direction == "out" }.map { ($0.name, $0.type) })
            case .signal(_, let name):
                guard let args = documented.signals[name] else { return ["no signal \(name)"] }
                (member, arguments) = (name, args.map { ($0.name, $0.type) })
            case .property(_, let name):
                guard let property = documented.properties[name] else { return ["no property \(name)"] }
                (member, arguments) = (name, [(name, property.type)])
            case .properties:
                return ["all the properties of \(interface): not in dbus/*.xml"]
            }
            var problems: [String] = []
            let read = reads.filter { $0.path.count == 1 }.map { "\($0.name) \($0.signature)" }
            let expected = arguments.map { "\($0.name) \($0.type)" }
            if read != expected { problems.append("arguments \(read), documented \(expected)") }

            let text = documentation(of: member, in: interface, api)
            let keyTypes = documentedKeys(text)
            for key in reads where key.kind == .key {
                let types = keyTypes[key.name] ?? []
                if !types.contains(key.signature) {
                    problems.append("\(key): documented " + (types.isEmpty ? "without a type" : "as \(types.sorted())"))
                }
            }
            // A struct's fields, each struct's in its order.
            let structs = Dictionary(grouping: reads.filter { $0.kind == .field && $0.path.count > 1 }) { Array($0.path.dropLast()) }
            for (parent, fields) in structs.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                let names = fields.map(\.name)
                let listed = orderedNames(text)
                if listed != names {
                    problems.append("the fields of \(parent.joined(separator: ".")) \(names), documented in this order: "
                                    + (listed.map { "\($0)" } ?? "none"))
                }
            }
            return problems
        }

        /// The comment of `member`, and those of the members of its interface it refers to ("Books as in ListBooks"),
        /// and of theirs.
        static func documentation(of member: String, in interface: String, _ api: IntrospectedAPI) -> String {
            let members = Set(api.interfaces[interface].map { Array($0.methods.keys) + Array($0.signals.keys) } ?? [])
            var seen: Set<String> = []
            var texts: [String] = []
            var next = [member]
            while let name = next.popLast() {
                guard seen.insert(name).inserted, let text = api.documentation[interface + "." + name] else { continue }
                texts.append(text)
                next += members.filter { !seen.contains($0) && text.range(of: "\\b\($0)\\b", options: .regularExpression) != nil }
            }
            return texts.joined(separator: "\n")
        }

        /// The keys a comment gives a type, with it: "status s", "book x (…)", "speed (d)", "files (u: how many)",
        /// "listened and content (x, µs)", "added, modified, last_played (x, …)".
        static func documentedKeys(_ text: String) -> [String: Set<String>] {
            let name = "[A-Za-z_][A-Za-z0-9_]*"
            // The type codes: so that a word ("its note (s: …)") is not taken for a type.
            let type = "[ybnqiuxtdsoghva{}()]+"
            let pattern = "\\b(\(name)(?:,\\s+\(name)|\\s+and\\s+\(name))*)\\s+(?:\\((\(type))[):,]|(\(type))(?=[,.;:)\\]]|\\s+[(\"]|\\s*$))"
            let expression = try! NSRegularExpression(pattern: pattern)
            var keys: [String: Set<String>] = [:]
            for match in expression.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let group = { (n: Int) in Range(match.range(at: n), in: text).map { String(text[$0]) } }
                // "(x), " is read as "x)": the type is what is left once the parentheses that close the text are off.
                guard let names = group(1), var signature = group(2) ?? group(3) else { continue }
                while DBusType(signature) == nil, signature.hasSuffix(")") { signature.removeLast() }
                guard DBusType(signature) != nil else { continue }
                for key in names.components(separatedBy: CharacterSet(charactersIn: ", ")).filter({ !$0.isEmpty && $0 != "and" }) {
                    keys[key, default: []].insert(signature)
                }
            }
            return keys
        }

        /// The names of a struct's fields, as a comment lists them "in this order: id (x), shelf (x), …" or "in a fixed
        /// order: (key, value as text, source)": the first word of each.
        static func orderedNames(_ text: String) -> [String]? {
            guard let marker = text.range(of: "in (this|a fixed) order:\\s*", options: .regularExpression) else { return nil }
            var rest = text[marker.upperBound...]
            let parenthesized = rest.first == "("
            if parenthesized { rest = rest.dropFirst() }
            var items: [String] = [""]
            var depth = 0
            for character in rest {
                if depth == 0 && (character == "." || character == ";" || (parenthesized && character == ")")) { break }
                if depth == 0 && character == "," { items.append(""); continue }
                if character == "(" { depth += 1 } else if character == ")" { depth -= 1 }
                items[items.count - 1].append(character)
            }
            return items.map { item in
                String(item.drop { $0.isWhitespace }.prefix { $0.isLetter || $0.isNumber || $0 == "_" })
            }
        }
    }
}
