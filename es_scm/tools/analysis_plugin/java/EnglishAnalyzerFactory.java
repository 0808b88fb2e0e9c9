package es_scm.analysis;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.elasticsearch.plugin.NamedComponent;
import org.elasticsearch.plugin.analysis.AnalyzerFactory;

/**
 * The {@code english} analyzer as Elasticsearch builds it with default settings: Lucene's
 * EnglishAnalyzer with its default stop words and no stem exclusions (standard tokenizer,
 * possessive removal, lowercasing, stop words, Porter stemming).
 */
@NamedComponent("english")
public final class EnglishAnalyzerFactory implements AnalyzerFactory {
    @Override
    public Analyzer create() {
        return new EnglishAnalyzer(EnglishAnalyzer.getDefaultStopSet(), CharArraySet.EMPTY_SET);
    }
}
