import Testing
@testable import DBus

/// Values go into a real libdbus message and are read back out of it.
private func roundTrip(_ values: [DBusValue]) throws -> [DBusValue] {
    let message = try #require(OutgoingMessage.methodCall(destination: nil, path: .root, interface: nil,
                                                          member: MemberName("Test")!))
    try message.append(values)
    return Unmarshaller.values(of: message.raw)
}

@Suite struct MarshallingTests {
    static let basics: [DBusValue] = [
        .byte(0), .byte(255), .boolean(true), .boolean(false),
        .int16(.min), .int16(.max), .uint16(.max), .int32(.min), .int32(-1), .uint32(.max),
        .int64(.min), .int64(.max), .uint64(.max), .double(-0.5), .double(.infinity), .double(1e-300),
        .string(""), .string("Ünïcödé ✓ 📚"), .objectPath(ObjectPath("/org/lectern/Lectern1/book/7")!),
        .objectPath(.root), .signature(Signature("a{sv}")!), .signature(.empty),
    ]

    @Test(arguments: basics)
    func basicValueRoundTrips(_ value: DBusValue) throws {
        #expect(try roundTrip([value]) == [value])
    }

    @Test func nanSurvivesAsNaN() throws {
        let back = try roundTrip([.double(.nan)])
        #expect(back.first?.double?.isNaN == true)
    }

    @Test func containersRoundTrip() throws {
        let values: [DBusValue] = [
            .array(.int32, []),
            .array(.string, [.string("a"), .string("b")]),
            .array(.array(.byte), [.array(.byte, []), .array(.byte, [.byte(1), .byte(2)])]),
            .emptyVardict,
            .vardict(["xesam:title": .string("Chapter"), "mpris:length": .int64(60_000_000),
                      "xesam:artist": .strings(["A", "B"]), "nested": .vardict(["deep": .boolean(true)])]),
            .dictionary(key: .uint32, value: .array(.objectPath), [.init(.uint32(1), .objectPaths([.root]))]),
            .structure([.boolean(false), .structure([.objectPath(.root), .string(""), .string("")])]),
            .array(.structure([.objectPath, .string, .string]), []),
            .variant(.variant(.variant(.string("three deep")))),
            .variant(.array(.variant, [.variant(.int16(3)), .variant(.emptyVardict)])),
        ]
        #expect(try roundTrip(values) == values)
    }

    @Test func deepestAllowedNestingRoundTrips() throws {
        var arrays: DBusValue = .int32(7)
        for _ in 0..<32 { arrays = .array(arrays.type, [arrays]) }
        #expect(try roundTrip([arrays]) == [arrays])

        var structs: DBusValue = .int32(7)
        for _ in 0..<32 { structs = .structure([structs]) }
        #expect(try roundTrip([structs]) == [structs])

        var variants: DBusValue = .int32(7)
        for _ in 0..<60 { variants = .variant(variants) }
        #expect(try roundTrip([variants]) == [variants])
    }

    @Test func tooDeepIsRefusedBeforeLibdbusSeesIt() {
        var arrays: DBusValue = .int32(7)
        for _ in 0..<33 { arrays = .array(arrays.type, [arrays]) }
        #expect(throws: MarshallingError.self) { try arrays.validate() }

        var variants: DBusValue = .int32(7)
        for _ in 0..<65 { variants = .variant(variants) }
        #expect(throws: MarshallingError.nestedTooDeeply) { try variants.validate() }
        #expect(throws: BusError.self) { try roundTrip([variants]) }

        // Structs in structs, 33 deep: a signature libdbus refuses (32 at most), out of any array or variant.
        var structs: DBusValue = .int32(7)
        for _ in 0..<33 { structs = .structure([structs]) }
        #expect(throws: MarshallingError.self) { try structs.validate() }
        #expect(throws: BusError.self) { try roundTrip([structs]) }
    }

    @Test func invalidValuesAreRefused() {
        #expect(throws: MarshallingError.stringContainsNUL) { try DBusValue.string("a\0b").validate() }
        #expect(throws: MarshallingError.self) { try DBusValue.array(.string, [.int32(1)]).validate() }
        #expect(throws: MarshallingError.emptyStructure) { try DBusValue.structure([]).validate() }
        // Containers of the same code ('a') but another type.
        #expect(throws: MarshallingError.elementTypeMismatch(expected: "as", found: "a{sv}")) {
            try DBusValue.array(.array(.string), [.emptyVardict]).validate()
        }
        #expect(throws: MarshallingError.elementTypeMismatch(expected: "ax", found: "as")) {
            try DBusValue.dictionary(key: .string, value: .array(.int64), [.init(.string("k"), .strings(["v"]))]).validate()
        }
        #expect(throws: MarshallingError.self) {
            try DBusValue.dictionary(key: .variant, value: .string, []).validate()
        }
    }

    @Test func anArrayOfStructsRoundTrips() throws {
        let row = DBusType.structure([.int64, .string, .uint32, .boolean])
        let page = DBusValue.array(row, [
            .structure([.int64(1), .string("Dune"), .uint32(3), .boolean(false)]),
            .structure([.int64(2), .string("Ünïcödé ✓"), .uint32(0), .boolean(true)]),
        ])
        #expect(page.type.signature == "a(xsub)")
        #expect(try roundTrip([page, .uint32(2)]) == [page, .uint32(2)])
        #expect(try roundTrip([.array(row, [])]) == [.array(row, [])])
        #expect(try roundTrip([.variant(page)]) == [.variant(page)])
    }

    /// `isOf` and `typeCode` agree with the value's built type, for every kind of value and of type.
    @Test func aValueIsOfItsTypeAndOfNoOther() {
        let values: [DBusValue] = Self.basics + [
            .variant(.int32(1)), .strings(["a"]), .array(.int64, []), .emptyVardict, .vardict(["k": .variant(.string("v"))]),
            .dictionary(key: .string, value: .array(.int64), []), .structure([.int64(1), .string("a")]),
            .structure([.string("a"), .int64(1)]), .structure([.int64(1)]), .structure([.structure([.int64(1), .strings([])])]),
            .structure([.structure([.int64(1), .array(.int64, [])])]), .structure([.variant(.boolean(true))]), .structure([]),
            .array(.structure([.int64, .string]), []),
        ]
        let types = values.map(\.type) + [.structure([]), .array(.variant), .dictionary(key: .string, value: .string)]
        for value in values {
            #expect(value.typeCode == value.type.code, "\(value)")
            for type in types { #expect(value.isOf(type) == (value.type == type), "\(value) of \(type.signature)") }
        }
    }

    @Test func structsThatDoNotFitTheirArrayAreRefused() {
        let row = DBusType.structure([.int64, .string])
        #expect(throws: MarshallingError.elementTypeMismatch(expected: "(xs)", found: "(x)")) {
            try DBusValue.array(row, [.structure([.int64(1), .string("a")]), .structure([.int64(2)])]).validate()
        }
        #expect(throws: MarshallingError.elementTypeMismatch(expected: "(xs)", found: "(sx)")) {
            try DBusValue.array(row, [.structure([.string("a"), .int64(1)])]).validate()
        }
        #expect(throws: MarshallingError.stringContainsNUL) {
            try DBusValue.array(row, [.structure([.int64(1), .string("a")]), .structure([.int64(2), .string("b\0")])]).validate()
        }
        #expect(throws: BusError.self) { try roundTrip([.array(row, [.structure([.int64(1), .string("b\0")])])]) }
    }

    @Test func typesReportTheirSignature() {
        #expect(DBusValue.vardict([:]).type.signature == "a{sv}")
        #expect(DBusValue.structure([.objectPath(.root), .string("x")]).type.signature == "(os)")
        #expect(DBusValue.array(.dictionary(key: .string, value: .variant), []).type.signature == "aa{sv}")
    }

    @Test func anOrderedVardictKeepsTheOrderGiven() {
        let ordered = DBusValue.vardict(ordered: ["b": .int32(1), "a": .string("x")])
        #expect(ordered.type.signature == "a{sv}")
        #expect(ordered.stringKeyedDictionary == ["a": .string("x"), "b": .int32(1)])
        guard case .dictionary(_, _, let entries) = ordered else { Issue.record("\(ordered)"); return }
        #expect(entries.map(\.key) == [.string("b"), .string("a")])
        #expect(DBusValue.vardict(ordered: ["a": .string("x"), "b": .int32(1)]) == .vardict(["b": .int32(1), "a": .string("x")]))
    }
}

@Suite struct NameTests {
    @Test func objectPaths() {
        #expect(ObjectPath("/") != nil)
        #expect(ObjectPath("/org/mpris/MediaPlayer2") != nil)
        #expect(ObjectPath("/a_b/C9") != nil)
        for bad in ["", "org", "/org/", "//", "/a//b", "/a-b", "/a.b", "/ä"] { #expect(ObjectPath(bad) == nil, "\(bad)") }
        #expect(ObjectPath("/org")!.isAncestor(of: ObjectPath("/org/mpris")!))
        #expect(!ObjectPath("/org")!.isAncestor(of: ObjectPath("/organ")!))
        #expect(ObjectPath.root.isAncestor(of: ObjectPath("/org")!))
    }

    @Test func busAndInterfaceNames() {
        #expect(BusName("org.mpris.MediaPlayer2.lectern") != nil)
        #expect(BusName("org.mpris.MediaPlayer2.lectern.instance123") != nil)
        #expect(BusName(":1.42") != nil)
        #expect(BusName("a-b.c") != nil)
        for bad in ["", "org", ".org.x", "org..x", "1org.x", "org.x.", String(repeating: "a.", count: 200)] {
            #expect(BusName(bad) == nil, "\(bad)")
        }
        #expect(InterfaceName("org.mpris.MediaPlayer2.Player") != nil)
        #expect(InterfaceName("org.a-b.c") == nil)
        #expect(MemberName("PlayPause") != nil)
        #expect(MemberName("Play.Pause") == nil)
        #expect(MemberName("9Lives") == nil)
    }

    @Test func signatures() {
        #expect(Signature("a{sv}")?.types == [.dictionary(key: .string, value: .variant)])
        #expect(Signature("ox(ss)aay")?.types.count == 4)
        #expect(Signature("") == .empty)
        for bad in ["a", "(", "()", "a{vs}", "{sv}", "a{s}", "a{sss}", "z", String(repeating: "a", count: 33) + "y"] {
            #expect(Signature(bad) == nil, "\(bad)")
        }
        #expect(Signature(String(repeating: "a", count: 32) + "y") != nil)
    }
}
