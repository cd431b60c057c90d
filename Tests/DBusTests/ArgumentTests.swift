import Testing
@testable import DBus

/// A call as a handler sees it, with `arguments`.
private func call(_ arguments: [DBusValue]) -> MethodCall {
    MethodCall(sender: ":1.7", path: .root, interface: InterfaceName("org.example.Thing")!, member: MemberName("Do")!,
               arguments: arguments)
}

/// The message of the InvalidArgs error `body` throws; nil when it throws nothing (another error is an issue).
private func invalidArgs(_ body: () throws -> Void) -> String? {
    do { try body() } catch let error as BusError where error.name == "org.freedesktop.DBus.Error.InvalidArgs" {
        return error.message
    } catch {
        Issue.record("not InvalidArgs: \(error)")
    }
    return nil
}

@Suite struct ArgumentTests {
    @Test func basicTypesAreReadAsTheirSwiftTypes() throws {
        let path = ObjectPath("/org/example/7")!
        let c = call([.boolean(true), .byte(255), .int16(-2), .uint16(2), .int32(-3), .uint32(3), .int64(.min), .uint64(.max),
                      .double(2.5), .string("Ünïcode"), .objectPath(path)])
        let (flag, byte, short, ushort, int, uint, long, ulong, double, text, object) =
            try c.arguments(Bool.self, UInt8.self, Int16.self, UInt16.self, Int32.self, UInt32.self, Int64.self,
                            UInt64.self, Double.self, String.self, ObjectPath.self)
        #expect(flag && byte == 255 && short == -2 && ushort == 2 && int == -3 && uint == 3)
        #expect(long == .min && ulong == .max && double == 2.5 && text == "Ünïcode" && object == path)
        let offset: Int64 = try c.argument(6)
        #expect(offset == .min)
        #expect(try c.argument(9, as: String.self) == "Ünïcode")
    }

    @Test func containersAreReadAsArraysAndDictionaries() throws {
        let c = call([.array(.int64, [.int64(1), .int64(2)]), .vardict(["speed": .double(1.5), "loop": .string("Track")]),
                      .objectPaths([.root]), .strings([]), .dictionary(key: .uint32, value: .string, [.init(.uint32(1), .string("one"))])])
        let (ids, settings, paths, names, byNumber) = try c.arguments([Int64].self, [String: DBusValue].self, [ObjectPath].self,
                                                                     [String].self, [UInt32: String].self)
        #expect(ids == [1, 2])
        #expect(settings == ["speed": .double(1.5), "loop": .string("Track")])
        #expect(paths == [.root] && names.isEmpty && byNumber == [1: "one"])
    }

    @Test func aVariantIsReadAsTheValueInsideItOneLevelDeep() throws {
        #expect(try DBusValue.variant(.int32(4)).decoded(as: DBusValue.self) == .int32(4))
        #expect(try DBusValue.variant(.variant(.int32(4))).decoded(as: DBusValue.self) == .variant(.int32(4)))
        let bag = try DBusValue.vardict(["nested": .variant(.double(2))]).decoded(as: [String: DBusValue].self)
        #expect(bag == ["nested": .variant(.double(2))])
    }

    @Test func anotherTypeIsInvalidArgsWithoutConversion() {
        let c = call([.int32(7), .string("x")])
        let widened = invalidArgs { _ = try c.argument(0, as: Int64.self) }
        #expect(widened?.contains("argument 0 is of type 'i', read as 'x'") == true, "\(widened ?? "no error")")
        #expect(invalidArgs { _ = try c.arguments(Int32.self, ObjectPath.self) } != nil)
        #expect(invalidArgs { _ = try DBusValue.double(1).decoded(as: Int64.self) } != nil)
        #expect(invalidArgs { _ = try DBusValue.int32(1).decoded(as: DBusValue.self) } != nil)  // not a variant
        // Containers check their element types, also when empty, and every element.
        #expect(invalidArgs { _ = try DBusValue.array(.int32, []).decoded(as: [Int64].self) } != nil)
        #expect(invalidArgs { _ = try DBusValue.emptyVardict.decoded(as: [String: String].self) } != nil)
        #expect(invalidArgs { _ = try DBusValue.array(.int64, [.int64(1), .int32(2)]).decoded(as: [Int64].self) } != nil)
    }

    @Test func argumentsMustAllBeReadAndExist() {
        let c = call([.int32(7), .string("x")])
        #expect(invalidArgs { _ = try c.argument(2, as: Int32.self) } != nil)
        #expect(invalidArgs { _ = try c.arguments(Int32.self) } != nil)
        #expect(invalidArgs { _ = try c.arguments(Int32.self, String.self, String.self) } != nil)
        #expect(invalidArgs { _ = try call([]).arguments() } == nil)
    }
}
