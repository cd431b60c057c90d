import PulseAudio
import Testing
@testable import LecternSoundServer

/// The output watcher's model of the sound server, fed plain values: no sound server, no daemon.
@Suite struct SoundServerModelTests {
    static let speakers = PulseSink(index: 1, name: "speakers")
    static let headphones = PulseSink(index: 2, name: "headphones", ports: [PulsePort(name: "jack", availability: .yes)],
                                      activePort: "jack")

    /// Connected, with both sinks listed, the default sink "speakers" and no stream of ours.
    static func connected() -> SoundServerModel {
        var server = SoundServerModel()
        server.connect()
        server.list([speakers, headphones])
        server.setDefaultSink(speakers)
        server.findStream(nil)
        server.settleCurrentOutput()
        return server
    }

    @Test func theOutputInUseIsOurStreamsSinkElseTheDefaultSinkAndNoneWhileDisconnected() {
        var server = SoundServerModel()
        let unchanged = server.settleCurrentOutput()
        #expect(unchanged == nil)  // "" already
        server = Self.connected()
        #expect(server.currentOutput == "speakers")
        let formerSink = server.updateStream(PulseSinkInput(index: 7, sinkIndex: 2))
        #expect(formerSink == nil)
        #expect(server.currentOutput == "speakers", "changed only when settled")
        let onTheStreamsSink = server.settleCurrentOutput()
        #expect(onTheStreamsSink == "headphones")
        let settledAgain = server.settleCurrentOutput()
        #expect(settledAgain == nil, "unchanged")
        let notOurs = server.removeStream(8)
        #expect(notOurs == false, "not ours")
        let ours = server.removeStream(7)
        #expect(ours)
        let backToDefault = server.settleCurrentOutput()
        #expect(backToDefault == "speakers")
        server.disconnect()
        let disconnected = server.settleCurrentOutput()
        #expect(disconnected == "")
        #expect(server.sinks.isEmpty && server.defaultSink == nil && server.stream == nil && !server.sinksListed)
    }

    @Test func aRemovedSinkIsReturnedOnceAndComparedWithTheOutputInUseBeforeTheRemoval() {
        var server = Self.connected()
        _ = server.updateStream(PulseSinkInput(index: 7, sinkIndex: 2))
        server.settleCurrentOutput()
        let gone = server.removeSink(2)
        #expect(gone == Self.headphones)
        #expect(gone.map { server.isInUse($0.index) } == true, "still the output in use: the loss is seen")
        let secondRemoval = server.removeSink(2)
        #expect(secondRemoval == nil, "a second removal is not a loss")
        let afterRemoval = server.settleCurrentOutput()
        #expect(afterRemoval == "speakers", "our stream's sink is unknown now: the default sink")
    }

    @Test func aChangedSinkReturnsItsFormerSelfForThePortComparison() {
        var server = Self.connected()
        var unplugged = Self.headphones
        unplugged.ports = [PulsePort(name: "jack", availability: .no)]
        let old = server.updateSink(unplugged)
        #expect(old == Self.headphones)
        #expect(old.map { unplugged.jackChanges(since: $0).unplugged } == "jack")
        let newSink = server.updateSink(PulseSink(index: 3, name: "usb"))
        #expect(newSink == nil, "a new sink")
        #expect(server.sinks.count == 3)
    }

    @Test func aStreamMovedElsewhereTellsTheSinkItLeft() {
        var server = Self.connected()
        _ = server.updateStream(PulseSinkInput(index: 7, sinkIndex: 2))
        let before = server.updateStream(PulseSinkInput(index: 7, sinkIndex: 1))
        #expect(before == Self.headphones)
        server.removeSink(2)
        #expect(server.sinks[2] == nil)
        #expect(server.streamSink == Self.speakers)
    }

    @Test func aReturnIsTakenOnceAfterALoss() {
        var server = Self.connected()
        let firstConnection = server.takeReturn()
        #expect(!firstConnection, "the first connection is no return")
        server.disconnect()
        server.connect()
        let afterLoss = server.takeReturn()
        #expect(afterLoss)
        let takenAgain = server.takeReturn()
        #expect(!takenAgain)
    }

    @Test func unlistedSinksMayHoldAnyOutput() {
        var server = SoundServerModel()
        server.connect()
        #expect(server.mayHaveSink(named: "headphones"), "listing failed: not known to be absent")
        server.list([Self.speakers])
        #expect(!server.mayHaveSink(named: "headphones"))
        #expect(server.mayHaveSink(named: "speakers"))
    }

    @Test func theDefaultSinkCountsOnlyWithoutAStreamOnAKnownSink() {
        var server = Self.connected()
        server.setDefaultSink(Self.headphones)
        let newDefault = server.settleCurrentOutput()
        #expect(newDefault == "headphones")
        server.setDefaultSink(nil)
        let noDefault = server.settleCurrentOutput()
        #expect(noDefault == "")
        server.list([Self.speakers, Self.speakers])  // the first of two with one index
        #expect(server.sinks.count == 1)
    }

    @Test func ofTwoSinksWithOneNameOnlyTheOneOurStreamPlaysToIsInUse() {
        // PipeWire lets two sinks have one name.
        let first = PulseSink(index: 40, name: "headphones"), second = PulseSink(index: 41, name: "headphones")
        var server = Self.connected()
        _ = server.updateSink(first)
        _ = server.updateSink(second)
        _ = server.updateStream(PulseSinkInput(index: 7, sinkIndex: 41))
        let inUse = server.settleCurrentOutput()
        #expect(inUse == "headphones")
        #expect(!server.isInUse(40) && server.isInUse(41))
        let unused = server.removeSink(40)
        #expect(unused.map { server.isInUse($0.index) } == false, "the other sink of that name is no loss")
        let afterTheOther = server.settleCurrentOutput()
        #expect(afterTheOther == nil && server.isInUse(41))
        let used = server.removeSink(41)
        #expect(used.map { server.isInUse($0.index) } == true, "the one our stream plays to is")
    }

    @Test func aRemovedDefaultSinkIsForgottenUntilTheServerNamesTheNext() {
        var server = Self.connected()
        #expect(server.isInUse(Self.speakers.index))
        let gone = server.removeSink(Self.speakers.index)
        #expect(gone == Self.speakers)
        #expect(server.defaultSink == nil)
        let none = server.settleCurrentOutput()
        #expect(none == "", "no sink in use, and no name left over")
        server.setDefaultSink(Self.headphones)
        let next = server.settleCurrentOutput()
        #expect(next == "headphones")
        #expect(server.isInUse(Self.headphones.index))
    }
}
