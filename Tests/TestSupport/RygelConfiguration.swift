/// A `rygel.conf` for Rygel 0.42 in a test: one plugin on, every other off, announced on the loopback only. Rygel reads
/// `$XDG_CONFIG_HOME/rygel.conf` before /etc/rygel.conf (whose plugins are on) and ignores `-c FILE`, so the test
/// writes this there. `plugin`: "MPRIS" (Rygel renders to the MPRIS players on its bus) or "Playbin" (a renderer of
/// its own, named `title`).
public func rygelConfiguration(enabling plugin: String, title: String? = nil) -> String {
    let plugins = ["MPRIS", "Playbin", "MediaExport", "Tracker", "Tracker3", "LMS", "External", "GstLaunch"]
    let sections = plugins.map { name in
        "[\(name)]\nenabled=\(name == plugin)\n" + (name == plugin ? title.map { "title=\($0)\n" } ?? "" : "")
    }
    return "[general]\ninterface=lo\nport=0\nipv6=false\nenable-transcoding=false\nupnp-enabled=true\n" + sections.joined()
}
