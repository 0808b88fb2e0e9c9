package es_scm.analysis;

import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.en.PorterStemFilter;
import org.elasticsearch.plugin.NamedComponent;
import org.elasticsearch.plugin.analysis.TokenFilterFactory;

/** The {@code porter_stem} token filter: Lucene's PorterStemFilter (expects lowercase input). */
@NamedComponent("porter_stem")
public final class PorterStemFilterFactory implements TokenFilterFactory {
    @Override
    public TokenStream create(TokenStream input) {
        return new PorterStemFilter(input);
    }
}
