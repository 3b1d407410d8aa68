// A JeroMQ peer for the conformance tests, driven line by line over stdin/stdout so that
// one JVM serves many scenarios.
//
// Commands (one per line; frames are hex, separated by commas, an empty frame is an empty
// string; a message of one empty frame is written "-"):
//   socket ID TYPE [IDENTITY-HEX]   -> "ok"        (TYPE: PUSH, PULL, PUB, SUB, REQ, REP,
//                                                   DEALER, ROUTER)
//   bind ID                          -> "ok PORT"   (tcp://127.0.0.1, a free port)
//   connect ID ENDPOINT              -> "ok"
//   subscribe ID TOPIC-HEX           -> "ok"
//   send ID FRAMES                   -> "ok" or "fail"
//   recv ID TIMEOUT-MS               -> "msg FRAMES" or "timeout"
//   close ID                         -> "ok"
//   quit                             -> "bye", and the program ends
// Any error is reported as "error TEXT".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import org.zeromq.ZMQ;

public final class LegacyPeer {
    private static final HexFormat HEX = HexFormat.of();

    private static int type(String name) {
        switch (name) {
            case "PUSH": return ZMQ.PUSH;
            case "PULL": return ZMQ.PULL;
            case "PUB": return ZMQ.PUB;
            case "SUB": return ZMQ.SUB;
            case "REQ": return ZMQ.REQ;
            case "REP": return ZMQ.REP;
            case "DEALER": return ZMQ.DEALER;
            case "ROUTER": return ZMQ.ROUTER;
            default: throw new IllegalArgumentException("socket type " + name);
        }
    }

    private static List<byte[]> frames(String text) {
        List<byte[]> frames = new ArrayList<>();
        if (text.equals("-")) {
            frames.add(new byte[0]);
            return frames;
        }
        for (String f : text.split(",", -1)) {
            frames.add(HEX.parseHex(f));
        }
        return frames;
    }

    private static String show(List<byte[]> frames) {
        if (frames.size() == 1 && frames.get(0).length == 0) {
            return "-";
        }
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < frames.size(); i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(HEX.formatHex(frames.get(i)));
        }
        return b.toString();
    }

    public static void main(String[] args) throws Exception {
        ZMQ.Context ctx = ZMQ.context(1);
        Map<String, ZMQ.Socket> sockets = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.split(" ");
            try {
                switch (w[0]) {
                    case "socket": {
                        ZMQ.Socket s = ctx.socket(type(w[2]));
                        s.setLinger(0);
                        s.setReconnectIVL(50);
                        if (w.length > 3) {
                            s.setIdentity(HEX.parseHex(w[3]));
                        }
                        sockets.put(w[1], s);
                        out.println("ok");
                        break;
                    }
                    case "bind":
                        out.println("ok " + sockets.get(w[1]).bindToRandomPort("tcp://127.0.0.1"));
                        break;
                    case "connect":
                        sockets.get(w[1]).connect(w[2]);
                        out.println("ok");
                        break;
                    case "subscribe":
                        sockets.get(w[1]).subscribe(w.length > 2 ? HEX.parseHex(w[2]) : new byte[0]);
                        out.println("ok");
                        break;
                    case "send": {
                        ZMQ.Socket s = sockets.get(w[1]);
                        s.setSendTimeOut(10000);
                        List<byte[]> fs = frames(w.length > 2 ? w[2] : "");
                        boolean sent = true;
                        for (int i = 0; i < fs.size() && sent; i++) {
                            sent = s.send(fs.get(i), i + 1 < fs.size() ? ZMQ.SNDMORE : 0);
                        }
                        out.println(sent ? "ok" : "fail");
                        break;
                    }
                    case "recv": {
                        ZMQ.Socket s = sockets.get(w[1]);
                        s.setReceiveTimeOut(Integer.parseInt(w[2]));
                        byte[] first = s.recv(0);
                        if (first == null) {
                            out.println("timeout");
                            break;
                        }
                        List<byte[]> fs = new ArrayList<>();
                        fs.add(first);
                        while (s.hasReceiveMore()) {
                            fs.add(s.recv(0));
                        }
                        out.println("msg " + show(fs));
                        break;
                    }
                    case "close":
                        sockets.remove(w[1]).close();
                        out.println("ok");
                        break;
                    case "quit":
                        for (ZMQ.Socket s : sockets.values()) {
                            s.close();
                        }
                        ctx.term();
                        out.println("bye");
                        return;
                    default:
                        out.println("error unknown command " + w[0]);
                }
            } catch (Exception e) {
                out.println("error " + e);
            }
        }
    }
}
