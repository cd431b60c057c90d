import PulseAudio
import Testing

/// The jack events the output watcher acts on, read from two snapshots of a sink as libpulse reports them.
/// (Null sinks have no ports, so the route integration tests can't unplug a jack: a real analog card is needed.)
@Suite struct JackTests {
    static let headphones = "analog-output-headphones"
    static let speakers = "analog-output-speaker"

    static func sink(active: String?, headphones: PulsePort.Availability, speakers: PulsePort.Availability = .unknown) -> PulseSink {
        PulseSink(index: 3, name: "alsa_output.pci-0000_00_1f.3.analog-stereo",
                  ports: [PulsePort(name: Self.speakers, availability: speakers),
                          PulsePort(name: Self.headphones, availability: headphones)],
                  activePort: active)
    }

    @Test func unpluggingTheActiveHeadphonesIsAnUnplug() {
        let before = Self.sink(active: Self.headphones, headphones: .yes)
        let change = Self.sink(active: Self.headphones, headphones: .no).jackChanges(since: before)
        #expect(change.unplugged == Self.headphones)
        #expect(change.pluggedIn.isEmpty)
    }

    @Test func theServerSwitchingToTheSpeakersInTheSameUpdateIsStillAnUnplug() {
        // module-switch-on-port-available moves the sink to the speakers as the headphones go.
        let before = Self.sink(active: Self.headphones, headphones: .yes)
        let change = Self.sink(active: Self.speakers, headphones: .no).jackChanges(since: before)
        #expect(change.unplugged == Self.headphones)
    }

    @Test func aPortThatCouldNotTellBeforeCountsAsPlugged() {
        let before = Self.sink(active: Self.headphones, headphones: .unknown)
        #expect(Self.sink(active: Self.headphones, headphones: .no).jackChanges(since: before).unplugged == Self.headphones)
    }

    @Test func anInactivePortOrAnAlreadyUnpluggedOneIsNoUnplug() {
        let speakersActive = Self.sink(active: Self.speakers, headphones: .yes)
        #expect(Self.sink(active: Self.speakers, headphones: .no).jackChanges(since: speakersActive).unplugged == nil)
        let alreadyOut = Self.sink(active: Self.headphones, headphones: .no)
        #expect(alreadyOut.jackChanges(since: alreadyOut).unplugged == nil)
        let noPorts = PulseSink(index: 1, name: "null")
        #expect(noPorts.jackChanges(since: noPorts) == (nil, []))
    }

    @Test func pluggingBackInIsReportedForThatPortOnly() {
        let before = Self.sink(active: Self.speakers, headphones: .no, speakers: .yes)
        #expect(Self.sink(active: Self.speakers, headphones: .yes, speakers: .yes).jackChanges(since: before) == (nil, [Self.headphones]))
        #expect(Self.sink(active: Self.headphones, headphones: .unknown, speakers: .yes).jackChanges(since: before).pluggedIn == [Self.headphones])
        #expect(before.jackChanges(since: before).pluggedIn.isEmpty)
    }
}
