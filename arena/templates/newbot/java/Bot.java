// __NAME__: a Least Score bot in Java, standard library only. Change chooseMove, then run `arena check __NAME__`.
//
// The referee sends one JSON object per line on stdin; a bot answers hello and turn with one line each on stdout
// and ignores every other message (protocol/PROTOCOL.md). The JSON reader below is just enough for that: it finds
// a key of the top-level object and reads strings, booleans and arrays of strings, skipping everything else.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

public class Bot {
    /** A cursor over one line; every reader throws IllegalArgumentException on anything malformed. */
    static final class Json {
        private final String text;
        private int at;

        Json(String text) { this.text = text; }

        private char peek() {
            while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) at++;
            return at < text.length() ? text.charAt(at) : '\0';
        }

        private boolean eat(char c) {
            if (peek() != c) return false;
            at++;
            return true;
        }

        private void expect(char c) {
            if (!eat(c)) throw new IllegalArgumentException("expected " + c + " at " + at);
        }

        String string() {  // escapes decoded, \\uXXXX included
            expect('"');
            StringBuilder out = new StringBuilder();
            while (at < text.length() && text.charAt(at) != '"') {
                char c = text.charAt(at++);
                if (c == '\\' && at < text.length()) {
                    c = text.charAt(at++);
                    switch (c) {
                        case 'n': c = '\n'; break;
                        case 't': c = '\t'; break;
                        case 'r': c = '\r'; break;
                        case 'b': c = '\b'; break;
                        case 'f': c = '\f'; break;
                        case 'u': c = (char) Integer.parseInt(text.substring(at, Math.min(at + 4, text.length())), 16); at += 4; break;
                        default: break;  // \" \\ \/ stand for themselves
                    }
                }
                out.append(c);
            }
            expect('"');
            return out.toString();
        }

        void skip(int depth) {  // any value
            char c = peek();
            if (depth > 64) throw new IllegalArgumentException("nested too deep");
            if (c == '"') { string(); return; }
            if (c == '[' || c == '{') {
                char close = c == '[' ? ']' : '}';
                at++;
                if (eat(close)) return;
                do {
                    if (close == '}') { string(); expect(':'); }
                    skip(depth + 1);
                } while (eat(','));
                expect(close);
                return;
            }
            int start = at;  // a number, true, false or null
            while (at < text.length() && ",]} \t\r\n".indexOf(text.charAt(at)) < 0) at++;
            if (at == start) throw new IllegalArgumentException("expected a value at " + at);
        }

        /** Move to the value of {@code key} in the top-level object; false if it is not there. */
        boolean find(String key) {
            at = 0;
            expect('{');
            if (eat('}')) return false;
            do {
                String name = string();
                expect(':');
                if (name.equals(key)) { peek(); return true; }
                skip(0);
            } while (eat(','));
            return false;
        }

        static String getString(String line, String key) {
            Json json = new Json(line);
            return json.find(key) ? json.string() : null;
        }

        static boolean getTrue(String line, String key) {
            Json json = new Json(line);
            return json.find(key) && line.startsWith("true", json.at);
        }

        static List<String> getStrings(String line, String key) {
            Json json = new Json(line);
            List<String> values = new ArrayList<>();
            if (!json.find(key)) return values;
            json.expect('[');
            if (json.eat(']')) return values;
            do values.add(json.string()); while (json.eat(','));
            json.expect(']');
            return values;
        }
    }

    static int value(String card) {  // A=1 .. 9=9, T J Q K = 10
        int rank = "A23456789TJQK".indexOf(card.charAt(0)) + 1;
        return rank <= 0 ? 10 : Math.min(rank, 10);
    }

    /** The move for a turn message. A single card is always a legal set, and so is a pair (two cards of one rank);
     * cards must come from the message's "hand". may_declare is false on your first turn of a round. */
    static String chooseMove(String line) {
        List<String> hand = Json.getStrings(line, "hand");
        int total = hand.stream().mapToInt(Bot::value).sum();
        if (hand.isEmpty() || (Json.getTrue(line, "may_declare") && total <= 4)) return "{\"type\":\"declare\"}";
        List<String> best = List.of(hand.get(0));
        for (int i = 0; i < hand.size(); i++) {
            if (value(hand.get(i)) > value(best.get(0)) * best.size()) best = List.of(hand.get(i));
            for (int j = i + 1; j < hand.size(); j++)
                if (hand.get(i).charAt(0) == hand.get(j).charAt(0) && 2 * value(hand.get(i)) > value(best.get(0)) * best.size())
                    best = List.of(hand.get(i), hand.get(j));
        }
        System.err.println("throwing " + String.join(" ", best));  // stderr is your log, never stdout
        return "{\"type\":\"play\",\"discard\":[\"" + String.join("\",\"", best) + "\"],\"take\":\"deck\"}";
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (String line; (line = in.readLine()) != null; ) {  // one message per line, however long
            String reply;
            try {
                String type = Json.getString(line, "type");
                // "persistent": this process may play several matches, each from its own hello; match_end gets "done"
                if ("hello".equals(type)) reply = "{\"type\":\"ready\",\"persistent\":true}";
                else if ("turn".equals(type)) reply = chooseMove(line);
                else if ("match_end".equals(type)) reply = "{\"type\":\"done\"}";
                else continue;  // round_start, played, round_end, ... want no reply: answering them is a fault
            } catch (IllegalArgumentException | IndexOutOfBoundsException error) {
                System.err.println("not a message (" + error.getMessage() + "): " + line.substring(0, Math.min(200, line.length())));
                continue;
            }
            out.println(reply);
            out.flush();  // the referee sees nothing until you flush
        }
    }
}
