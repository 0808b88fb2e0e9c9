package es_scm.analysis;

import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.en.KStemFilter;
import org.elasticsearch.plugin.NamedComponent;
import org.elasticsearch.plugin.analysis.TokenFilterFactory;

/** The {@code kstem} token filter: Lucene's KStemFilter (expects lowercase input). */
@NamedComponent("kstem")
public final class KStemFilterFactory implements TokenFilterFactory {
    @Override
    public TokenStream create(TokenStream input) {
        return new KStemFilter(input);
    }
}
