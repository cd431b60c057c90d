import DBus
import Foundation
import Testing
import TestSupport

/// Random D-Bus values for a signature, from a seeded generator: the same seed sends the same calls.
struct ValueMaker {
    var random: SeededGenerator
    /// Strings a call may get besides random text: paths of the throw-away library and hostile ones.
    let paths: [String]

    static let objectPaths = ["/", "/org/mpris/MediaPlayer2/TrackList/NoTrack", "/org/lectern/Lectern1",
                              "/org/lectern/Lectern1/playlist/1", "/org/lectern/track/1", "/a/b/c"]
    static let dictKeys = ["speed", "volume", "loop", "shuffle", "title", "name", "note", "position", "x"]
    static let int64s: [Int64] = [0, 1, 2, 3, -1, Int64.min, Int64.max, 1_000_000, 30_000_000, -5_000_000]
    static let doubles: [Double] = [0, 1, -1, 0.5, 2, .nan, .infinity, -.infinity, 1e308, -0.0, 4, 0.25]

    mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &random)] }
    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }

    mutating func string() -> String {
        switch Int.random(in: 0..<8, using: &random) {
        case 0: return ""
        case 1, 2: return pick(paths)
        case 3: return "file://" + pick(paths)
        case 4: return pick(["None", "Track", "Playlist", "pause-only", "off", "pause-and-resume", "Playing", "data:,x",
                             "http://127.0.0.1:1/x.ogg", "../../../etc/shadow", "é🎧\u{202E}"])
        case 5: return String(repeating: "long", count: Int.random(in: 100...20_000, using: &random))
        default:
            let count = Int.random(in: 1...24, using: &random)
            return String((0..<count).map { _ in Character(UnicodeScalar(UInt8.random(in: 32...126, using: &random))) })
        }
    }

    /// A value of `type`; `depth` keeps containers small.
    mutating func value(_ type: DBusType, depth: Int = 0) -> DBusValue {
        switch type {
        case .byte: return .byte(UInt8.random(in: 0...255, using: &random))
        case .boolean: return .boolean(chance(50))
        case .int16: return .int16(Int16.random(in: .min ... .max, using: &random))
        case .uint16: return .uint16(UInt16.random(in: 0 ... .max, using: &random))
        case .int32: return .int32(chance(50) ? Int32.random(in: -3...30, using: &random) : Int32.random(in: .min ... .max, using: &random))
        case .uint32: return .uint32(chance(50) ? UInt32.random(in: 0...3_600, using: &random) : UInt32.random(in: 0 ... .max, using: &random))
        case .int64: return .int64(chance(60) ? pick(Self.int64s) : Int64.random(in: -100_000_000...100_000_000, using: &random))
        case .uint64: return .uint64(UInt64.random(in: 0 ... .max, using: &random))
        case .double: return .double(chance(70) ? pick(Self.doubles) : Double.random(in: -10...10, using: &random))
        case .string: return .string(string())
        case .objectPath: return .objectPath(ObjectPath(pick(Self.objectPaths))!)
        case .signature: return .signature(Signature(pick(["", "s", "a{sv}", "(ii)", "v"]))!)
        case .unixFD: return .int32(0)  // no fds are passed: replaced by an ill-typed int32
        case .variant:
            let inner = depth < 3 ? randomType(depth: depth + 1) : .string
            return .variant(value(inner, depth: depth + 1))
        case .array(let element):
            let count = depth < 3 ? Int.random(in: 0...3, using: &random) : 0
            return .array(element, (0..<count).map { _ in value(element, depth: depth + 1) })
        case .dictionary(let key, let valueType):
            let count = depth < 3 ? Int.random(in: 0...4, using: &random) : 0
            var seen = Set<DBusValue>()
            var entries: [DBusValue.DictEntry] = []
            for _ in 0..<count {
                let k = key == .string ? DBusValue.string(pick(Self.dictKeys)) : value(key, depth: depth + 1)
                guard seen.insert(k).inserted else { continue }
                entries.append(.init(k, value(valueType, depth: depth + 1)))
            }
            return .dictionary(key: key, value: valueType, entries)
        case .structure(let fields):
            return .structure(fields.map { value($0, depth: depth + 1) })
        }
    }

    mutating func randomType(depth: Int = 0) -> DBusType {
        let basic: [DBusType] = [.byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .string, .objectPath, .signature]
        guard depth < 2, chance(30) else { return pick(basic) }
        switch Int.random(in: 0..<4, using: &random) {
        case 0: return .array(randomType(depth: depth + 1))
        case 1: return .dictionary(key: pick([.string, .int64, .uint32]), value: randomType(depth: depth + 1))
        case 2: return .structure((0..<Int.random(in: 1...3, using: &random)).map { _ in randomType(depth: depth + 1) })
        default: return .variant
        }
    }

    /// Arguments that do not match `inputs` (another count or other types).
    mutating func wrongArguments(for inputs: [DBusType]) -> [DBusValue] {
        while true {
            let types = (0..<Int.random(in: 0...3, using: &random)).map { _ in randomType() }
            if types.map(\.signature) != inputs.map(\.signature) { return types.map { value($0) } }
        }
    }
}

extension Reliability {
    /// Random calls to every member of every object Lectern exports: well-typed and ill-typed, property sets,
    /// destructive members on a throw-away library. The daemon must stay alive and keep answering.
    @Suite struct Fuzz {
        /// Members that end the daemon by design.
        static let excluded: Set<String> = ["org.mpris.MediaPlayer2.Quit"]

        struct SentCall: CustomStringConvertible {
            var index: Int
            var destination: String
            var path: String
            var interface: String
            var member: String
            var arguments: [DBusValue]
            var outcome = "no answer"
            var description: String {
                let args = arguments.map { a in let d = "\(a)"; return d.count > 120 ? String(d.prefix(120)) + "…(\(d.count) chars)" : d }
                return "#\(index) \(path) \(interface).\(member)(\(args.joined(separator: ", "))) -> \(outcome)"
            }
        }

        @Test func randomCallsToEveryMemberNeverKillOrHangTheDaemon() async throws {
            let profile = Profile.current
            let seed = SeededGenerator.seed()
            try await Rig.with { rig in
                try await rig.start()
                let media = try await ReliabilityMedia.shared()
                let book = try await rig.importBook(media.book)
                try await rig.lectern("ActivateBook", [.int64(book), .boolean(true)])
                let scratch = rig.directory.appending("scratch")
                try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
                try FileManager.default.copyItem(at: media.shortFile, to: scratch.appendingPathComponent("a.ogg"))

                let api = try await ExportedAPI.walk(rig.client, destination: Names.lectern)
                let members = api.objects.flatMap { object in
                    object.interfaces.flatMap { interface in
                        interface.methods.filter { !Self.excluded.contains("\(interface.name).\($0.name)") }
                            .map { (object.path, interface, $0) }
                    }
                }
                let properties = api.objects.flatMap { object in
                    object.interfaces.flatMap { interface in interface.properties.map { (object.path, interface.name, $0) } }
                }
                #expect(api.objects.contains { $0.path == Names.mprisPath } && api.objects.contains { $0.path == Names.lecternPath },
                        "introspection found \(api.objects.map(\.path))")
                #expect(members.count >= 30, "only \(members.count) methods found by introspection")

                var maker = ValueMaker(random: SeededGenerator(seed: seed),
                                       paths: [media.book.path, media.book.appendingPathComponent("1.ogg").path, scratch.path,
                                               scratch.appendingPathComponent("a.ogg").path, "/nonexistent/x.ogg",
                                               "/etc/shadow", "/dev/zero", "/proc/self/environ", rig.databasePath])
                var sent: [SentCall] = []
                var counts = (ok: 0, errors: 0, illTyped: 0)
                let start = ContinuousClock.now
                func report(_ problem: String) -> Comment {
                    Comment(rawValue: """
                        \(problem)
                        replay with: LECTERN_RELIABILITY_SEED=\(seed) LECTERN_RELIABILITY=\(profile.name) \
                        swift test --no-parallel --filter Fuzz
                        the last calls sent (of \(sent.count)):
                        \(sent.suffix(30).map(\.description).joined(separator: "\n"))
                        daemon log (end):
                        \(rig.daemonLog.suffix(3_000))
                        """)
                }

                for index in 0..<profile.fuzzCalls {
                    var call: SentCall
                    let wellTyped = maker.chance(70)
                    if maker.chance(80) || properties.isEmpty {
                        let (path, interface, method) = maker.pick(members)
                        let arguments = wellTyped ? method.inputs.map { maker.value($0) } : maker.wrongArguments(for: method.inputs)
                        call = SentCall(index: index, destination: maker.chance(50) ? Names.lectern : Names.mpris, path: path,
                                        interface: interface.name, member: method.name, arguments: arguments)
                    } else {
                        let (path, interface, property) = maker.pick(properties)
                        let value = wellTyped ? maker.value(property.type) : maker.value(maker.randomType())
                        call = SentCall(index: index, destination: Names.mpris, path: path, interface: Names.properties, member: "Set",
                                        arguments: [.string(interface), .string(property.name), .variant(value)])
                    }
                    if !wellTyped { counts.illTyped += 1 }
                    sent.append(call)
                    do {
                        _ = try await rig.client.call(call.destination, path: call.path, interface: call.interface,
                                                      member: call.member, call.arguments, timeout: .seconds(10))
                        sent[sent.count - 1].outcome = "ok"
                        counts.ok += 1
                    } catch let error as BusError {
                        sent[sent.count - 1].outcome = error.name
                        counts.errors += 1
                        let fatal = ["org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Disconnected",
                                     "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"]
                        if fatal.contains(error.name) {
                            Issue.record(report("call #\(index) got \(error)"))
                            break
                        }
                        if !wellTyped && call.interface != Names.properties && error.name != "org.freedesktop.DBus.Error.InvalidArgs" {
                            Issue.record(report("an ill-typed call got \(error.name), not InvalidArgs"))
                        }
                    } catch {
                        Issue.record(report("call #\(index) could not be sent: \(error)"))
                        break
                    }
                    if index % 25 == 24 || index == profile.fuzzCalls - 1 {
                        guard rig.daemon?.isRunning == true else {
                            Issue.record(report("lecternd died: \(rig.daemon?.termination.map { "\($0)" } ?? "?")"))
                            break
                        }
                        do {
                            _ = try await rig.client.call(Names.lectern, path: Names.lecternPath, interface: Names.library,
                                                          member: "ListAllShelves", timeout: .seconds(5))
                            _ = try await rig.get("Identity", interface: Names.root)
                        } catch {
                            Issue.record(report("lecternd stopped answering: \(error)"))
                            break
                        }
                    }
                }
                let elapsed = ContinuousClock.now - start
                Figures.record("fuzzer", "calls", "\(sent.count) (\(counts.illTyped) ill-typed) to \(members.count) methods and \(properties.count) properties of \(api.objects.count) objects in \(Figures.ms(elapsed))")
                Figures.record("fuzzer", "seed", "\(seed)")
                Figures.record("fuzzer", "replies", "\(counts.ok) ok, \(counts.errors) D-Bus errors")
                if rig.daemon?.isRunning == true {
                    #expect(try await rig.stop() == 0, report("lecternd did not exit 0 on SIGTERM after fuzzing"))
                }
                #expect(try await rig.integrityCheck() == "ok")
            }
        }
    }
}
